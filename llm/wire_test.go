package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
)

// An overload error sent inside an Anthropic stream, before any text, is
// retried like a 529; the retried stream's text arrives once.
func TestStreamErrorEventRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if calls.Add(1) == 1 {
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3}}}\n\n")
			fmt.Fprint(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
			return
		}
		for _, ev := range []string{
			`{"type":"message_start","message":{"model":"m","usage":{"input_tokens":3,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"ping"}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"fine"}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
			`{"type":"message_stop"}`,
		} {
			fmt.Fprintf(w, "data: %s\r\n\r\n", ev) // CRLF line ends are SSE too
		}
	}))
	defer srv.Close()
	c, err := llm.New(llm.Config{Provider: "anthropic", BaseURL: srv.URL, Model: "m"}, llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	res, err := c.Stream(context.Background(), hi, func(d string) { got.WriteString(d) })
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "fine" || res.Content != "fine" || res.FinishReason != "end_turn" || res.Usage.OutputTokens != 2 || calls.Load() != 2 {
		t.Errorf("deltas %q res %+v after %d calls", got.String(), res, calls.Load())
	}
}

// A gateway's extra request keys and message keys pass through; they never
// replace a key loom writes.
func TestOpenAIPassThrough(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	c := s.Client(t, nil)
	req := llm.Request{
		Messages: []messages.Message{messages.Message{Role: messages.RoleUser, Content: messages.TextContent("hi")}.WithExtra(map[string]json.RawMessage{"cache_control": json.RawMessage(`{"type":"ephemeral"}`)})},
		Extra:    map[string]json.RawMessage{"seed": json.RawMessage("7"), "user": json.RawMessage(`"u1"`), "model": json.RawMessage(`"evil"`)},
	}
	for _, keep := range []bool{false, true} {
		req.KeepMessageExtra = keep
		if _, err := c.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range s.Requests() {
		if r.JSON["seed"] != 7.0 || r.JSON["user"] != "u1" || r.JSON["model"] != "test-model" {
			t.Errorf("request %d: %s", i, r.Body)
		}
		m := r.JSON["messages"].([]any)[0].(map[string]any)
		if _, has := m["cache_control"]; has != (i == 1) {
			t.Errorf("request %d: message extra sent = %v", i, has)
		}
	}
}

// A base URL's own query (Azure's api-version, say) stays after the path.
func TestBaseURLQuery(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	cfg := s.Config()
	cfg.BaseURL += "?api-version=2024-10-21"
	c, _ := llm.New(cfg, llmtest.Options(nil)...)
	if _, err := c.Complete(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	if p := s.Requests()[0].Path; p != "/v1/chat/completions" {
		t.Errorf("path %s", p)
	}
}

// A developer message (OpenAI's newer system role) reaches an OpenAI-style
// endpoint as it is, and Anthropic as user text.
func TestDeveloperRole(t *testing.T) {
	req := llm.Request{Messages: []messages.Message{
		{Role: messages.RoleDeveloper, Content: messages.TextContent("be terse")},
		{Role: messages.RoleUser, Content: messages.TextContent("hi")},
	}}
	for _, format := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		s := llmtest.New(t, format)
		if _, err := s.Client(t, nil).Complete(context.Background(), req); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		first := s.Requests()[0].JSON["messages"].([]any)[0].(map[string]any)
		want := map[string]string{llmtest.OpenAI: "developer", llmtest.Anthropic: "user"}[format]
		if first["role"] != want {
			t.Errorf("%s: first message %v, want role %s", format, first, want)
		}
	}
}
