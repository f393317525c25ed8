package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The -fit mode: what fitting a request into the model's context window
// costs (issue #30's goal: at most 0.5 ms on a 200-message request). The
// same streamed Chat Completions request, 200 messages of history (some
// 12k tokens) on the large workspace's prompt (some 15k), goes through
// loom three ways, told apart by its model id:
//
//	counted    fake-model: no window is known, so the request is only
//	           counted (X-Loom-Prompt-Tokens), as every request is
//	fit-none   a gateway.models alias with a 1,000,000-token window:
//	           fitted, nothing to drop
//	fit-drop   an alias with a 24,000-token window: fitted, the oldest
//	           history dropped (and the note put in)
//
// fit-none minus counted is what fitting adds when a request fits;
// fit-drop minus counted, when it does not.

const fitYAML = `gateway:
  models:
    fit-none:
      model: fake-model
      context_window: 1000000
    fit-drop:
      model: fake-model
      context_window: 24000
`

// fitBody is a streamed request with 200 messages of history before its
// question: user and assistant turns of some 60 tokens each.
func fitBody(model string) []byte {
	msgs := []map[string]string{{"role": "system", "content": "You are terse."}}
	for i := range 200 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role, "content": fmt.Sprintf(
			"Message %d of the long conversation: the figures for region %d came in at %d units, "+
				"which is %d more than the week before; the notes say the supplier changed its schedule again.", i, i%17, 1000+i*7, i%23)})
	}
	msgs = append(msgs, map[string]string{"role": "user", "content": "What changed today?"})
	b, _ := json.Marshal(map[string]any{"model": model, "stream": true, "max_tokens": 1000, "messages": msgs})
	return b
}

func fitTargets() ([]target, string) {
	dropped := func(want bool) func(url string) error {
		return func(url string) error {
			return checkDropped(url, want)
		}
	}
	return []target{
		{name: "direct", body: fitBody("fake-model"), done: wholeReply},
		{name: "counted", path: "/v1/chat/completions", body: fitBody("fake-model"), done: wholeReply},
		{name: "fit-none", path: "/v1/chat/completions", body: fitBody("fit-none"), done: wholeReply, check: dropped(false)},
		{name: "fit-drop", path: "/v1/chat/completions", body: fitBody("fit-drop"), done: wholeReply, check: dropped(true)},
	}, fitYAML
}

// checkDropped sends the request once more and checks that loom dropped
// history (or did not), by its X-Loom-History-Dropped header.
func checkDropped(url string, want bool) error {
	model := "fit-none"
	if want {
		model = "fit-drop"
	}
	res, err := http.Post(url, "application/json", bytes.NewReader(fitBody(model)))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	n := res.Header.Get("X-Loom-History-Dropped")
	if got := n != "" && n != "0"; got != want || res.StatusCode != 200 {
		return fmt.Errorf("status %d, X-Loom-History-Dropped %q (prompt tokens %s): want dropped %v", res.StatusCode, n, res.Header.Get("X-Loom-Prompt-Tokens"), want)
	}
	if strings.TrimSpace(res.Header.Get("X-Loom-Prompt-Tokens")) == "" {
		return fmt.Errorf("no X-Loom-Prompt-Tokens")
	}
	return nil
}
