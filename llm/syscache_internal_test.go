package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/loomctx/loom/messages"
)

// The bodies built with a kept system encoding are byte for byte the
// bodies encoded in one pass, first time and from the cache, for prompts
// that need escaping, that hold what the splice looks for, that split for
// Anthropic's cache breakpoint, with and without other messages, tools
// and extra fields, and after the cache has turned over.
func TestKeptSystemEncodingMatchesPlain(t *testing.T) {
	oa, err := New(Config{Provider: "openai", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	an, err := New(Config{Provider: "anthropic", BaseURL: "http://127.0.0.1:1", APIKey: "k", Model: `c","messages":[`})
	if err != nil {
		t.Fatal(err)
	}
	o, a := oa.(*openaiClient), an.(*anthropicClient)
	temp := 0.5
	systems := []string{
		"You are loom's agent.",
		"<b>bold</b> & \"quoted\" \\ \u2028 línea\n\t,\"messages\":[{\"role\":\"user\"}]",
		strings.Repeat("long prompt ", 10_000) + "\n\n## Client instructions\n\nBe terse.",
	}
	convs := [][]messages.Message{
		nil,
		{{Role: messages.RoleUser, Content: messages.TextContent(`hi ,"system":[ <x>`)}},
		{{Role: messages.RoleUser, Content: messages.TextContent("q")},
			{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{messages.NewToolCall("c1", "read", `{"path":"a"}`)}},
			messages.Message{Role: messages.RoleTool, Content: messages.TextContent("text")}.WithToolCallID("c1")},
	}
	var reqs []Request
	for _, sys := range systems {
		for _, conv := range convs {
			reqs = append(reqs,
				Request{System: sys, Messages: conv},
				Request{Model: "other", System: sys, Messages: conv, Temperature: &temp, MaxTokens: 7, SystemCacheAt: len(sys) / 2,
					Tools:      []Tool{{Name: "read", Description: "reads", Parameters: json.RawMessage(`{"type":"object"}`)}},
					ToolChoice: ForceTool("read"),
					Extra:      map[string]json.RawMessage{"top_p": json.RawMessage("0.9"), "messages": json.RawMessage("[]"), "a_key": json.RawMessage(`{"x": 1}`)}})
		}
	}
	for i := range 12 { // more prompts than the cache keeps
		reqs = append(reqs, Request{System: fmt.Sprintf("prompt %d", i), Messages: convs[1]})
	}
	for round := range 2 {
		for i, req := range reqs {
			for _, stream := range []bool{false, true} {
				for _, c := range []struct {
					name        string
					fast, plain func(Request, bool) ([]byte, error)
				}{{"openai", o.body, o.bodyPlain}, {"anthropic", a.body, a.bodyPlain}} {
					want, werr := c.plain(req, stream)
					got, gerr := c.fast(req, stream)
					if (werr != nil) != (gerr != nil) {
						t.Fatalf("round %d, %s request %d: error %v, plain %v", round, c.name, i, gerr, werr)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("round %d, %s request %d (stream %v):\ngot  %.300s\nwant %.300s", round, c.name, i, stream, got, want)
					}
					if werr == nil && !json.Valid(got) {
						t.Fatalf("%s request %d: not JSON", c.name, i)
					}
				}
			}
		}
	}
}
