package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loomctx/loom/server"
)

func TestMessagesOpenAI(t *testing.T) {
	_, c := newServer(t, server.Options{})
	history := []map[string]any{
		{"role": "user", "content": "hi"},
		{"role": "assistant", "content": "hello"},
	}
	r := c.do("POST", "/v1/workspaces/default/messages", map[string]any{
		"message": "/greet please", "history": history, "channel": "slack", "chat_id": "c1", "now": "2026-05-06T07:08:09Z",
	})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var out struct {
		Format   string `json:"format"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Report struct {
			Prefix struct {
				SHA256   string `json:"sha256"`
				Tokens   int    `json:"tokens"`
				Messages int    `json:"messages"`
			} `json:"prefix"`
			Expansions []struct{ Name string } `json:"expansions"`
		} `json:"report"`
	}
	r.decode(t, &out)
	if out.Format != "openai" || len(out.Messages) != 4 || out.Messages[0].Role != "system" || out.Messages[3].Role != "user" {
		t.Fatalf("messages: %s", r.Body)
	}
	sys := fmt.Sprint(out.Messages[0].Content)
	last := fmt.Sprint(out.Messages[3].Content)
	if !strings.Contains(sys, "MARKER-AGENTS-7f3") || strings.Contains(sys, "2026-05-06") {
		t.Fatalf("system prompt lacks the workspace or holds the runtime: %.200s", sys)
	}
	if !strings.Contains(last, "<skill_content name=\"greet\"") || !strings.Contains(last, "/greet please") || !strings.Contains(last, "c1") {
		t.Fatalf("current message: %s", last)
	}
	if out.Report.Prefix.SHA256 == "" || out.Report.Prefix.Tokens == 0 || out.Report.Prefix.Messages != 2 || len(out.Report.Expansions) != 1 {
		t.Fatalf("report: %+v", out.Report)
	}
}

func TestMessagesFormats(t *testing.T) {
	_, c := newServer(t, server.Options{})
	for _, f := range []string{"anthropic", "json"} {
		r := c.do("POST", "/v1/workspaces/default/messages", map[string]any{"message": "hi", "format": f, "cache_history": true})
		if r.Status != 200 || !strings.Contains(string(r.Body), "MARKER-AGENTS-7f3") {
			t.Fatalf("%s: %d %.300s", f, r.Status, r.Body)
		}
	}
	r := c.do("POST", "/v1/workspaces/default/messages", map[string]any{"message": "hi", "format": "anthropic"})
	if !strings.Contains(string(r.Body), `"cache_control":{"type":"ephemeral"}`) {
		t.Fatalf("anthropic request lacks the breakpoint: %.500s", r.Body)
	}
}

func TestMessagesBadInput(t *testing.T) {
	_, c := newServer(t, server.Options{})
	for _, tc := range []struct {
		body  string
		field string
	}{
		{`{"message": "hi", "format": "xml"}`, "format"},
		{`{"message": "hi", "role": "system"}`, "role"},
		{`{"message": "", "no_runtime": true}`, "message"},
		{`{"message": "hi", "history": [{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}]}`, "history"},
		{`{"message": "hi", "history": [{"role": "user", "content": 5}]}`, "history"},
		{`{"message": "hi", "budget": "x"}`, "budget"},
		{`{"message": "hi", "cache_ttl": "1d"}`, "cache_ttl"},
	} {
		r := c.do("POST", "/v1/workspaces/default/messages", tc.body)
		p := r.problem(t)
		if r.Status != 400 || !strings.HasPrefix(p.Field, tc.field) {
			t.Errorf("%s: %d field %q (%s)", tc.body, r.Status, p.Field, p.Detail)
		}
	}
}

func TestMessagesLongHistory(t *testing.T) {
	_, c := newServer(t, server.Options{})
	var h []map[string]any
	for i := 0; i < 200; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		h = append(h, map[string]any{"role": role, "content": fmt.Sprintf("message %d", i)})
	}
	r := c.do("POST", "/v1/workspaces/default/messages", map[string]any{"message": "and now?", "history": h})
	var out struct {
		Messages []any `json:"messages"`
	}
	r.decode(t, &out)
	if len(out.Messages) != 202 {
		t.Fatalf("got %d messages", len(out.Messages))
	}
}
