package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
)

func newClient(t *testing.T, s *llmtest.Server, sleeps *[]time.Duration) llm.Client {
	t.Helper()
	return s.Client(t, sleeps)
}

// jsonEqual compares a recorded body with the JSON text want.
func jsonEqual(t *testing.T, got map[string]any, want string) {
	t.Helper()
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("request body:\n%s\nwant:\n%s", g, want)
	}
}

var saveTool = llm.Tool{
	Name:        "save",
	Description: "Save it.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`),
}

func TestOpenAICompleteRequest(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{ToolCalls: []messages.ToolCall{messages.NewToolCall("c1", "save", `{"x":"1"}`)}})
	c := newClient(t, s, nil)
	temp := 0.0
	res, err := c.Complete(context.Background(), llm.Request{
		System: "be brief",
		Messages: []messages.Message{
			{Role: "user", Content: messages.TextContent("hi")},
			{Role: "assistant", ToolCalls: []messages.ToolCall{messages.NewToolCall("t1", "save", `{"x":"0"}`)}},
			messages.Message{Role: "tool", Content: messages.TextContent("done")}.WithToolCallID("t1"),
			{Role: "user", Content: messages.TextContent("again")},
		},
		Tools:       []llm.Tool{saveTool},
		ToolChoice:  llm.ForceTool("save"),
		MaxTokens:   100,
		Temperature: &temp,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0] != messages.NewToolCall("c1", "save", `{"x":"1"}`) {
		t.Errorf("tool calls = %+v", res.ToolCalls)
	}
	if res.FinishReason != "tool_calls" || !res.Usage.CacheReported || res.Usage.InputTokens == 0 {
		t.Errorf("response = %+v", res)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
		t.Errorf("path %s auth %q", r.Path, r.Header.Get("Authorization"))
	}
	jsonEqual(t, r.JSON, `{
	  "model": "test-model",
	  "max_tokens": 100,
	  "temperature": 0,
	  "messages": [
	    {"role": "system", "content": "be brief"},
	    {"role": "user", "content": "hi"},
	    {"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "save", "arguments": "{\"x\":\"0\"}"}}]},
	    {"role": "tool", "tool_call_id": "t1", "content": "done"},
	    {"role": "user", "content": "again"}
	  ],
	  "tools": [{"type": "function", "function": {"name": "save", "description": "Save it.",
	    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}],
	  "tool_choice": {"type": "function", "function": {"name": "save"}}
	}`)
}

func TestOpenAIJSONSchemaAndChoiceModes(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	c := newClient(t, s, nil)
	schema := map[string]any{"type": "object"}
	for _, mode := range []llm.ToolChoiceMode{llm.ToolChoiceAuto, llm.ToolChoiceNone} {
		if _, err := c.Complete(context.Background(), llm.Request{
			Messages: []messages.Message{{Role: "user", Content: messages.TextContent("x")}}, Tools: []llm.Tool{saveTool},
			ToolChoice: llm.ToolChoice{Mode: mode}, JSONSchema: &llm.JSONSchema{Name: "out", Schema: schema, Strict: true},
		}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.Requests()
	for i, want := range []string{"auto", "none"} {
		if reqs[i].JSON["tool_choice"] != want {
			t.Errorf("tool_choice = %v, want %s", reqs[i].JSON["tool_choice"], want)
		}
		got, _ := json.Marshal(reqs[i].JSON["response_format"])
		if string(got) != `{"json_schema":{"name":"out","schema":{"type":"object"},"strict":true},"type":"json_schema"}` {
			t.Errorf("response_format = %s", got)
		}
	}
}

func TestOpenAIStream(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Text: "Hello there, friend."})
	c := newClient(t, s, nil)
	var deltas []string
	res, err := c.Stream(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}},
		func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	// Events that arrive together come in one call; how they arrive is the
	// network's (TestStreamDeltasNotHeldBack paces them).
	if want := []string{"Hello", " there,", " friend."}; !llmtest.DeltasOnEvents(deltas, want...) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if res.Content != "Hello there, friend." || res.FinishReason != "stop" {
		t.Errorf("res = %+v", res)
	}
	r := s.Requests()[0]
	if want := s.Requests()[0].Usage; res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
	so, _ := json.Marshal(r.JSON["stream_options"])
	if r.JSON["stream"] != true || string(so) != `{"include_usage":true}` {
		t.Errorf("stream %v options %s", r.JSON["stream"], so)
	}
}

func TestStreamCut(t *testing.T) {
	for _, format := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(format, func(t *testing.T) {
			s := llmtest.New(t, format)
			// OpenAI: role chunk, "one", " two" then cut. Anthropic:
			// message_start, block_start, "one", " two" then cut.
			cut := 3
			if format == llmtest.Anthropic {
				cut = 4
			}
			s.Push(llmtest.Reply{Text: "one two three four", CutAfter: cut})
			c := newClient(t, s, nil)
			var got strings.Builder
			res, err := c.Stream(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}},
				func(d string) { got.WriteString(d) })
			if !errors.Is(err, llm.ErrStreamCut) {
				t.Fatalf("err = %v, want a cut stream", err)
			}
			if got.String() != "one two" || res.Content != "one two" {
				t.Errorf("deltas %q content %q", got.String(), res.Content)
			}
			// Text already reached the caller: no retry that would repeat it.
			if n := len(s.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func TestStreamCutBeforeTextIsRetried(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Text: "lost", CutAfter: 1}, llmtest.Reply{Text: "whole reply"})
	c := newClient(t, s, nil)
	var got strings.Builder
	res, err := c.Stream(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}},
		func(d string) { got.WriteString(d) })
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "whole reply" || res.Content != "whole reply" || len(s.Requests()) != 2 {
		t.Errorf("deltas %q content %q requests %d", got.String(), res.Content, len(s.Requests()))
	}
}

func TestRetries(t *testing.T) {
	for _, format := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(format, func(t *testing.T) {
			s := llmtest.New(t, format)
			s.Push(
				llmtest.Reply{Status: 500, Message: "boom"},
				llmtest.Reply{Status: 429, Message: "slow down", Header: map[string]string{"Retry-After": "7"}},
				llmtest.Reply{Text: "fine"},
			)
			var sleeps []time.Duration
			c := newClient(t, s, &sleeps)
			res, err := c.Complete(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != "fine" || len(s.Requests()) != 3 {
				t.Errorf("content %q after %d requests", res.Content, len(s.Requests()))
			}
			// The first wait is the jittered backoff, 250-500ms; the
			// second is what Retry-After asked.
			if len(sleeps) != 2 || sleeps[0] < 250*time.Millisecond || sleeps[0] > 500*time.Millisecond || sleeps[1] != 7*time.Second {
				t.Errorf("waits = %v, want [250ms..500ms 7s]", sleeps)
			}
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	for range 3 {
		s.Push(llmtest.Reply{Status: 503, Message: "overloaded"})
	}
	c := newClient(t, s, nil)
	_, err := c.Complete(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 {
		t.Fatalf("err = %v", err)
	}
	if want := "llm: " + s.URL + "/v1: status 503: overloaded"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (1 + 2 retries)", n)
	}
}

func TestNoRetryOn400(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Status: 400, Message: "tool_choice must be one of auto, none"})
	c := newClient(t, s, nil)
	_, err := c.Complete(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}})
	if !llm.IsToolChoiceRejected(err) || len(s.Requests()) != 1 {
		t.Errorf("err = %v after %d requests", err, len(s.Requests()))
	}
}

func TestTimeout(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Delay: time.Second, Text: "late"}, llmtest.Reply{Delay: time.Second, Text: "late"})
	cfg := s.Config()
	cfg.Timeout = 50 * time.Millisecond
	cfg.MaxRetries = 1
	c, _ := llm.New(cfg, llmtest.Options(nil)...)
	_, err := c.Complete(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}})
	var ue *llm.UnreachableError
	if !errors.As(err, &ue) || !ue.Timeout {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if !strings.Contains(err.Error(), s.URL) || len(s.Requests()) != 2 {
		t.Errorf("err = %v after %d requests", err, len(s.Requests()))
	}
}

func TestUnreachable(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	cfg := s.Config()
	s.Close()
	c, _ := llm.New(cfg, llmtest.Options(nil)...)
	_, err := c.Complete(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}})
	var ue *llm.UnreachableError
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "llm: cannot reach "+cfg.BaseURL+":") {
		t.Fatalf("err = %v", err)
	}
}

func TestCancel(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Delay: 5 * time.Second, Text: "late"})
	c := newClient(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // cancel once the request is in flight
		for len(s.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := c.Stream(ctx, llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}}, nil)
	if !errors.Is(err, context.Canceled) || len(s.Requests()) != 1 {
		t.Errorf("err = %v after %d requests", err, len(s.Requests()))
	}
}

func TestAnthropicRequest(t *testing.T) {
	s := llmtest.New(t, llmtest.Anthropic)
	s.Push(llmtest.Reply{Text: "ok", ToolCalls: []messages.ToolCall{messages.NewToolCall("tu1", "save", `{"x":"1"}`)}})
	c := newClient(t, s, nil)
	res, err := c.Complete(context.Background(), llm.Request{
		System: "be brief",
		Messages: []messages.Message{
			{Role: "user", Content: messages.TextContent("hi")},
			{Role: "assistant", Content: messages.TextContent("saving"), ToolCalls: []messages.ToolCall{messages.NewToolCall("t1", "save", `{"x":"0"}`)}},
			messages.Message{Role: "tool", Content: messages.TextContent("done")}.WithToolCallID("t1"),
			{Role: "user", Content: messages.TextContent("again")},
		},
		Tools:      []llm.Tool{saveTool},
		ToolChoice: llm.ForceTool("save"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "ok" || len(res.ToolCalls) != 1 || res.ToolCalls[0].Function.Arguments != `{"x":"1"}` || res.FinishReason != "tool_use" {
		t.Errorf("res = %+v", res)
	}
	r := s.Requests()[0]
	if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != "test-key" || r.Header.Get("Authorization") != "Bearer test-key" || r.Header.Get("Anthropic-Version") == "" {
		t.Errorf("path %s headers %v", r.Path, r.Header)
	}
	// The tool result and the next user text share one user turn.
	jsonEqual(t, r.JSON, `{
	  "model": "test-model",
	  "max_tokens": 4096,
	  "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
	  "messages": [
	    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
	    {"role": "assistant", "content": [{"type": "text", "text": "saving"}, {"type": "tool_use", "id": "t1", "name": "save", "input": {"x": "0"}}]},
	    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "done"}]}, {"type": "text", "text": "again"}]}
	  ],
	  "tools": [{"name": "save", "description": "Save it.", "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}],
	  "tool_choice": {"type": "tool", "name": "save"}
	}`)
}

func TestAnthropicStream(t *testing.T) {
	s := llmtest.New(t, llmtest.Anthropic)
	s.Push(llmtest.Reply{Text: "Hello there."})
	c := newClient(t, s, nil)
	var deltas []string
	res, err := c.Stream(context.Background(), llm.Request{System: "sys", Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}},
		func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if !llmtest.DeltasOnEvents(deltas, "Hello", " there.") || res.Content != "Hello there." || res.FinishReason != "end_turn" {
		t.Errorf("deltas %q res %+v", deltas, res)
	}
	if want := s.Requests()[0].Usage; res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
}

func TestConfig(t *testing.T) {
	if _, err := llm.New(llm.Config{}); !errors.Is(err, llm.ErrNotConfigured) {
		t.Errorf("empty config: %v", err)
	}
	if _, err := llm.New(llm.Config{Provider: "gemini", Model: "m", BaseURL: "http://x"}); err == nil ||
		!strings.Contains(err.Error(), `provider "gemini"`) {
		t.Errorf("bad provider: %v", err)
	}
	if _, err := llm.New(llm.Config{Model: "m", BaseURL: "ftp://x"}); err == nil || !strings.Contains(err.Error(), "want an http or https URL") {
		t.Errorf("bad scheme: %v", err)
	}
}

func TestRetryAfterHTTPDateAndCap(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Status: 429, Header: map[string]string{"Retry-After": "3600"}}, llmtest.Reply{Text: "ok"})
	var sleeps []time.Duration
	c := s.Client(t, &sleeps)
	if _, err := c.Complete(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}}); err != nil {
		t.Fatal(err)
	}
	// An hour asked, a minute waited: the cap.
	if !reflect.DeepEqual(sleeps, []time.Duration{time.Minute}) {
		t.Errorf("waits = %v", sleeps)
	}
	// An HTTP date is honoured too.
	sleeps = nil
	s.Push(llmtest.Reply{Status: 503, Header: map[string]string{"Retry-After": time.Now().Add(20 * time.Second).UTC().Format(http.TimeFormat)}}, llmtest.Reply{Text: "ok"})
	if _, err := c.Complete(context.Background(), llm.Request{Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}}); err != nil {
		t.Fatal(err)
	}
	if len(sleeps) != 1 || sleeps[0] < 15*time.Second || sleeps[0] > 20*time.Second {
		t.Errorf("waits = %v, want about 20s", sleeps)
	}
}
