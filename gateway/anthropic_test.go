package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/gateway"
	"github.com/loomctx/loom/server"
)

// anthropicUp is a fake Anthropic Messages API. It records every request
// and answers by its reply function, in the Messages API's own shapes.
type anthropicUp struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
	reply    func(w http.ResponseWriter, body map[string]any)
	// modelList answers GET /v1/models (404 when ""); modelAsks are the
	// requests it got.
	modelList string
	modelAsks []*http.Request
}

func newAnthropicUp(t *testing.T) *anthropicUp {
	u := &anthropicUp{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answerModels(w, r, &u.mu, &u.modelList, &u.modelAsks) {
			return
		}
		if r.URL.Path != "/v1/messages" {
			http.Error(w, "not the Messages API: "+r.URL.Path, 404)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		u.mu.Lock()
		u.requests = append(u.requests, recorded{Header: r.Header.Clone(), Body: body, Raw: raw})
		reply := u.reply
		u.mu.Unlock()
		if reply == nil {
			anthropicMessage(w, "ok")
			return
		}
		reply(w, body)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *anthropicUp) last(t *testing.T) recorded {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.requests) == 0 {
		t.Fatal("the Anthropic upstream got no request")
	}
	return u.requests[len(u.requests)-1]
}

func (u *anthropicUp) setReply(f func(w http.ResponseWriter, body map[string]any)) {
	u.mu.Lock()
	u.reply = f
	u.mu.Unlock()
}

// anthropicMessage writes a whole Messages API reply: text, then any
// tool_use blocks given as name, JSON input pairs.
func anthropicMessage(w http.ResponseWriter, text string, tools ...string) {
	content := []any{}
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	stop := "end_turn"
	for i := 0; i+1 < len(tools); i += 2 {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i/2+1), "name": tools[i], "input": json.RawMessage(tools[i+1])})
		stop = "tool_use"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-fake",
		"content": content, "stop_reason": stop, "usage": map[string]int{"input_tokens": 20, "output_tokens": 5, "cache_read_input_tokens": 7}})
}

// anthropicStream writes a streamed reply: the text pieces as text
// deltas, then a tool_use block when tool is set. It reports whether every
// text delta was written.
func anthropicStream(w http.ResponseWriter, pause time.Duration, tool string, pieces ...string) bool {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	ev := func(typ string, v map[string]any) bool {
		v["type"] = typ
		data, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data); err != nil {
			return false
		}
		w.(http.Flusher).Flush()
		time.Sleep(pause)
		return true
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-fake",
		"content": []any{}, "usage": map[string]int{"input_tokens": 30, "output_tokens": 1, "cache_read_input_tokens": 0}}})
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	for _, p := range pieces {
		if !ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": p}}) {
			return false
		}
	}
	ev("content_block_stop", map[string]any{"index": 0})
	stop := "end_turn"
	if tool != "" {
		stop = "tool_use"
		ev("content_block_start", map[string]any{"index": 1, "content_block": map[string]any{"type": "tool_use", "id": "toolu_s", "name": tool, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": `{"city":`}})
		ev("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": `"Oslo"}`}})
		ev("content_block_stop", map[string]any{"index": 1})
	}
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop}, "usage": map[string]int{"output_tokens": 9}})
	ev("message_stop", map[string]any{})
	return true
}

// setupAnthropic serves a workspace whose loom.yaml names an Anthropic
// upstream.
func setupAnthropic(t *testing.T, yamlExtra string) (*env, *anthropicUp) {
	t.Helper()
	for _, k := range []string{"LOOM_LLM_BASE_URL", "LOOM_LLM_API_KEY", "LOOM_LLM_MODEL", "LOOM_LLM_PROVIDER", "LOOM_MEMORY_DB"} {
		t.Setenv(k, "")
	}
	t.Setenv("LOOM_TEST_UPSTREAM_KEY", "sk-ant-upstream-secret")
	t.Setenv("LOOM_ALLOWED_ENDPOINTS", "127.0.0.1")
	up := newAnthropicUp(t)
	dir := writeWorkspace(t, up.URL, yamlExtra)
	yaml := fmt.Sprintf("llm:\n  provider: anthropic\n  base_url: %s\n  model: claude-fake\n  api_key_env: LOOM_TEST_UPSTREAM_KEY\n  consolidation:\n    enabled: false\n  extraction:\n    enabled: false\n%s", up.URL, yamlExtra)
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	gateway.Mount(s, gateway.Options{Now: func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return &env{base: ts.URL, dir: dir}, up
}

// A 1×1 PNG.
const pngDataURL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func TestAnthropicUpstream(t *testing.T) {
	e, up := setupAnthropic(t, "")
	up.setReply(func(w http.ResponseWriter, body map[string]any) {
		anthropicMessage(w, "Here you go.", "lookup", `{"q":"tea"}`)
	})
	res := e.post(t, "/v1/chat/completions", map[string]any{
		"model": "claude-fake",
		"messages": []any{
			map[string]any{"role": "system", "content": "CLIENT-SYSTEM-91x"},
			map[string]any{"role": "user", "content": "hello"},
			map[string]any{"role": "assistant", "content": "hi there"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": pngDataURL}},
				map[string]any{"type": "text", "text": "what is this? /greet"},
			}},
		},
		"temperature":    0.25,
		"max_tokens":     300,
		"stop":           "END",
		"tools":          []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "description": "Look up.", "parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}}},
		"tool_choice":    "required",
		"x_vendor_field": 1,
		"user":           "ann",
	}, "Authorization", "Bearer client-own-secret", "X-Loom-Channel", "slack")
	body := readAll(t, res)
	if res.StatusCode != 200 || len(res.Header.Get("X-Loom-Prefix-Sha256")) != 64 || res.Header.Get("X-Loom-Session") != "ann" {
		t.Fatalf("%d %v %s", res.StatusCode, res.Header, body)
	}
	var out struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
			Details          struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("reply is not a chat completion: %s", body)
	}
	c := out.Choices[0]
	if out.Object != "chat.completion" || out.Model != "claude-fake" || c.Message.Role != "assistant" || c.Message.Content == nil || *c.Message.Content != "Here you go." ||
		c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "toolu_1" || c.Message.ToolCalls[0].Type != "function" ||
		c.Message.ToolCalls[0].Function.Name != "lookup" || c.Message.ToolCalls[0].Function.Arguments != `{"q":"tea"}` {
		t.Fatalf("reply: %s", body)
	}
	// Anthropic counts cached tokens apart; OpenAI's prompt_tokens holds them.
	if out.Usage.PromptTokens != 27 || out.Usage.CompletionTokens != 5 || out.Usage.TotalTokens != 32 || out.Usage.Details.CachedTokens != 7 {
		t.Errorf("usage: %s", body)
	}

	got := up.last(t)
	if got.Header.Get("X-Api-Key") != "sk-ant-upstream-secret" || got.Header.Get("Anthropic-Version") == "" || strings.Contains(string(got.Raw), "client-own-secret") {
		t.Fatalf("upstream headers %v", got.Header)
	}
	b := got.Body
	// loom's prompt, the cache breakpoint after it, then the client's
	// system text in a block of its own.
	sys, _ := b["system"].([]any)
	if len(sys) != 2 {
		t.Fatalf("system: %s", got.Raw)
	}
	sys0, sys1 := sys[0].(map[string]any), sys[1].(map[string]any)
	text, _ := sys0["text"].(string)
	client, _ := sys1["text"].(string)
	if !strings.Contains(text, "MARKER-AGENTS-7f3") || strings.Contains(text, "CLIENT-SYSTEM-91x") || !strings.Contains(client, "CLIENT-SYSTEM-91x") ||
		strings.Contains(text+client, "2026-03-04") {
		t.Fatalf("system text: %.300q, then %.300q", text, client)
	}
	if cc, _ := sys0["cache_control"].(map[string]any); cc["type"] != "ephemeral" || sys1["cache_control"] != nil {
		t.Fatalf("the cache breakpoint is not after loom's prompt alone: %v", sys)
	}
	msgs := b["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("upstream got %d messages: %s", len(msgs), got.Raw)
	}
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "user,assistant,user" {
		t.Fatalf("roles %v", roles)
	}
	last := msgs[2].(map[string]any)["content"].([]any)
	img := last[0].(map[string]any)
	src, _ := img["source"].(map[string]any)
	if img["type"] != "image" || src["type"] != "base64" || src["media_type"] != "image/png" || !strings.HasPrefix(pngDataURL, "data:image/png;base64,"+src["data"].(string)[:8]) {
		t.Fatalf("image block: %v", img)
	}
	lastText, _ := json.Marshal(last[1:])
	if !strings.Contains(string(lastText), "what is this?") || !strings.Contains(string(lastText), "SKILL-BODY-GREET") || !strings.Contains(string(lastText), "2026-03-04") || !strings.Contains(string(lastText), "slack") {
		t.Fatalf("last user message: %s", lastText)
	}
	tools := b["tools"].([]any)
	tool := tools[0].(map[string]any)
	if tool["name"] != "lookup" || tool["description"] != "Look up." || tool["input_schema"].(map[string]any)["properties"] == nil {
		t.Errorf("tools: %v", tools)
	}
	if tc := b["tool_choice"].(map[string]any); tc["type"] != "any" {
		t.Errorf("tool_choice %v", tc)
	}
	if b["model"] != "claude-fake" || b["max_tokens"] != 300.0 || b["temperature"] != 0.25 || fmt.Sprint(b["stop_sequences"]) != "[END]" ||
		b["metadata"].(map[string]any)["user_id"] != "ann" || b["stream"] != nil || b["x_vendor_field"] != nil {
		t.Errorf("fields: %s", got.Raw)
	}

	// The turn is saved as for any upstream: the text as typed, the reply
	// with its tool call.
	hist := sessionMessages(t, e, "ann")
	if len(hist.Messages) != 2 || hist.Messages[1].Content.Text != "Here you go." || len(hist.Messages[1].ToolCalls) != 1 {
		t.Fatalf("saved: %+v", hist.Messages)
	}
}

func TestAnthropicToolLoop(t *testing.T) {
	e, up := setupAnthropic(t, "")
	res := e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "weather in Oslo?"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "toolu_9", "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"city":"Oslo"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "toolu_9", "content": `{"temp": 21}`},
	}, "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather"}}},
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "weather"}}})
	if body := readAll(t, res); res.StatusCode != 200 || !strings.Contains(body, `"content":"ok"`) || !strings.Contains(body, `"finish_reason":"stop"`) {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	got := up.last(t)
	msgs := got.Body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages: %s", got.Raw)
	}
	use := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	result := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	if use["type"] != "tool_use" || use["id"] != "toolu_9" || use["input"].(map[string]any)["city"] != "Oslo" ||
		result["type"] != "tool_result" || result["tool_use_id"] != "toolu_9" || msgs[2].(map[string]any)["role"] != "user" {
		t.Fatalf("tool loop: %s", got.Raw)
	}
	if tc := got.Body["tool_choice"].(map[string]any); tc["type"] != "tool" || tc["name"] != "weather" {
		t.Errorf("tool_choice %v", tc)
	}
	if schema := got.Body["tools"].([]any)[0].(map[string]any)["input_schema"].(map[string]any); schema["type"] != "object" {
		t.Errorf("a tool without parameters gets an object schema: %v", schema)
	}
}

func TestAnthropicStream(t *testing.T) {
	e, up := setupAnthropic(t, "")
	up.setReply(func(w http.ResponseWriter, body map[string]any) {
		anthropicStream(w, 20*time.Millisecond, "weather", "Hel", "lo <Ann>")
	})
	res := e.post(t, "/v1/chat/completions", map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "X-Loom-Session", "as-1")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %q %s", res.StatusCode, res.Header.Get("Content-Type"), readAll(t, res))
	}
	if up.last(t).Body["stream"] != true {
		t.Fatal("the upstream request was not streamed")
	}
	sc := bufio.NewScanner(res.Body)
	var deltas, finish []string
	var calls []map[string]any
	var usage map[string]any
	done, chunks := false, 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if done {
			t.Fatalf("data after [DONE]: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		chunks++
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role      string           `json:"role"`
					Content   *string          `json:"content"`
					ToolCalls []map[string]any `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				deltas = append(deltas, *ch.Delta.Content)
			}
			calls = append(calls, ch.Delta.ToolCalls...)
			if ch.FinishReason != nil {
				finish = append(finish, *ch.FinishReason)
			}
		}
	}
	res.Body.Close()
	if strings.Join(deltas, "|") != "Hel|lo <Ann>" || !done || fmt.Sprint(finish) != "[tool_calls]" {
		t.Fatalf("deltas %q done %v finish %v", deltas, done, finish)
	}
	if len(calls) != 1 || calls[0]["id"] != "toolu_s" || calls[0]["index"] != 0.0 || calls[0]["function"].(map[string]any)["arguments"] != `{"city":"Oslo"}` {
		t.Fatalf("tool calls %v", calls)
	}
	if usage["prompt_tokens"] != 30.0 || usage["completion_tokens"] != 9.0 {
		t.Fatalf("usage %v", usage)
	}
	hist := sessionMessages(t, e, "as-1")
	if len(hist.Messages) != 2 || hist.Messages[1].Content.Text != "Hello <Ann>" || len(hist.Messages[1].ToolCalls) != 1 || hist.Messages[1].Extra() != nil {
		t.Fatalf("saved: %+v", hist.Messages)
	}
}

// The first text reaches the client before the upstream has sent the rest.
func TestAnthropicStreamIsNotBuffered(t *testing.T) {
	e, up := setupAnthropic(t, "")
	release := make(chan struct{})
	up.setReply(func(w http.ResponseWriter, body map[string]any) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-fake\",\"usage\":{\"input_tokens\":3}}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"first\"}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	res := e.post(t, "/v1/chat/completions", map[string]any{"stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	got := make(chan string, 1)
	go func() {
		var seen strings.Builder
		for !strings.Contains(seen.String(), `"content":"first"`) {
			line, err := br.ReadString('\n')
			seen.WriteString(line)
			if err != nil {
				break
			}
		}
		got <- seen.String()
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, `"content":"first"`) {
			t.Fatalf("stream: %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first delta was held back until the upstream finished")
	}
	close(release)
	rest, _ := io.ReadAll(br)
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("end of stream: %q", rest)
	}
}

func TestAnthropicFaults(t *testing.T) {
	e, up := setupAnthropic(t, "")
	up.setReply(func(w http.ResponseWriter, body map[string]any) {
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	})
	for _, stream := range []bool{false, true} {
		res := e.post(t, "/v1/chat/completions", map[string]any{"stream": stream, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		body := readAll(t, res)
		if res.StatusCode != 429 || res.Header.Get("Retry-After") != "7" || !strings.Contains(body, "slow down") || !strings.Contains(body, `"type":"rate_limit_error"`) {
			t.Fatalf("429 (stream %v): %d %q %s", stream, res.StatusCode, res.Header.Get("Retry-After"), body)
		}
	}
	up.mu.Lock()
	n := len(up.requests)
	up.mu.Unlock()
	if n != 2 {
		t.Errorf("the gateway retried a 429 itself: %d upstream requests for 2", n)
	}
	// A field with no Messages API counterpart that cannot be dropped.
	res := e.post(t, "/v1/chat/completions", map[string]any{"n": 2, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if body := readAll(t, res); res.StatusCode != 400 || !strings.Contains(body, `"param":"n"`) {
		t.Fatalf("n=2: %d %s", res.StatusCode, body)
	}
	// A stream cut by the upstream after some text is saved as cut.
	up.setReply(func(w http.ResponseWriter, body map[string]any) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"half a\"}}\n\n")
	})
	res = e.post(t, "/v1/chat/completions", map[string]any{"stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "X-Loom-Session", "cut-a")
	if body := readAll(t, res); res.StatusCode != 200 || strings.Contains(body, "[DONE]") || !strings.Contains(body, "half a") {
		t.Fatalf("cut stream: %d %s", res.StatusCode, body)
	}
	hist := sessionMessages(t, e, "cut-a")
	if len(hist.Messages) != 2 || hist.Messages[1].Content.Text != "half a" || hist.Messages[1].Extra()["loom_cut"] == nil {
		t.Fatalf("saved: %+v", hist.Messages)
	}
	// The upstream goes away: 502 naming it, never the key.
	up.Close()
	res = e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	body := readAll(t, res)
	if res.StatusCode != 502 || !strings.Contains(body, strings.TrimPrefix(up.URL, "http://")) || strings.Contains(body, "sk-ant-upstream-secret") {
		t.Fatalf("upstream down: %d %s", res.StatusCode, body)
	}
}

// A client that leaves mid-stream cancels the Anthropic request; what it
// was sent is saved, marked cut.
func TestAnthropicClientDisconnect(t *testing.T) {
	e, up := setupAnthropic(t, "")
	finished := make(chan bool, 1)
	up.setReply(func(w http.ResponseWriter, body map[string]any) {
		pieces := []string{"one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight "}
		finished <- anthropicStream(w, 100*time.Millisecond, "", pieces...)
	})
	res := e.post(t, "/v1/chat/completions", map[string]any{"stream": true, "messages": []any{map[string]any{"role": "user", "content": "count"}}}, "X-Loom-Session", "acut")
	br := bufio.NewReader(res.Body)
	for seen := ""; !strings.Contains(seen, `"content":"one "`); {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended early: %q", seen)
		}
		seen += line
	}
	res.Body.Close()
	if <-finished {
		t.Fatal("the upstream request ran on after the client left")
	}
	hist := sessionMessages(t, e, "acut")
	if len(hist.Messages) != 2 {
		t.Fatalf("saved %d messages", len(hist.Messages))
	}
	reply := hist.Messages[1]
	if reply.Extra()["loom_cut"] == nil || !strings.HasPrefix(reply.Content.Text, "one") || strings.Contains(reply.Content.Text, "eight") {
		t.Fatalf("cut reply saved as %+v", reply)
	}
}

// With no key of loom's own and gateway.forward_auth, the client's bearer
// token goes to Anthropic as its x-api-key; without forward_auth it does not.
func TestAnthropicForwardAuth(t *testing.T) {
	for _, forward := range []bool{true, false} {
		extra := ""
		if forward {
			extra = "gateway:\n  forward_auth: true\n"
		}
		e, up := setupAnthropic(t, extra)
		t.Setenv("LOOM_TEST_UPSTREAM_KEY", "") // loom has no key
		res := e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}},
			"Authorization", "Bearer sk-ant-client-own")
		readAll(t, res)
		got := up.last(t).Header.Get("X-Api-Key")
		if forward && got != "sk-ant-client-own" || !forward && got != "" {
			t.Errorf("forward_auth %v: upstream x-api-key %q", forward, got)
		}
	}
}
