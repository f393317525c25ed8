// Package llmtest runs a fake model endpoint on a real HTTP server
// (httptest) that speaks the OpenAI Chat Completions and Anthropic Messages
// wire formats, JSON and SSE. It records every request so tests can assert
// exactly what loom sent, and replays scripted replies, faults included:
// error statuses with Retry-After, slow replies, streams cut mid-way.
// Usage figures are counted with a real BPE tokenizer (cl100k_base), and
// prompt caching is simulated on whole-message prefixes.
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/tokens"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
)

// Wire formats a Server speaks.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// Reply is one scripted answer.
type Reply struct {
	Status     int                 // non-2xx: an error reply with Message
	Message    string              // the error message for a non-2xx Status
	Header     map[string]string   // extra response headers (Retry-After, …)
	Delay      time.Duration       // wait before answering (or until the client gives up)
	Text       string              // assistant text
	ToolCalls  []messages.ToolCall // tool calls; arguments are sent as given
	CutAfter   int                 // streaming: cut the connection after this many events (0: never)
	RawBody    string              // sent verbatim instead of a built body
	Model      string              // model name in the reply; default the request's
	NoUsage    bool                // omit usage
	NoCacheRep bool                // omit the cached-token fields
	// Endless streams without end after Text: "text" sends a word per
	// event, "empty" events with no text (framing only), until the client
	// hangs up. The server counts what it sent in Sent.
	Endless string
	// Flood makes the reply's text this many bytes, written as it goes,
	// never held: one huge JSON body, or in a stream one huge event.
	Flood int64
}

// Sent waits until every endless or flooded reply has ended (the client
// hung up) and returns how many bytes they wrote, so a test can check the
// client stopped reading early.
func (s *Server) Sent() int64 {
	s.faults.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// Request is one recorded request.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
	JSON   map[string]any
	Stream bool
	// Usage is what the server reported for it.
	Usage llm.Usage
	// Kind is the caller's label, from the X-Loom-Test-Kind header if any,
	// else derived from the request (see kindOf).
	Kind string
}

// Server is a fake endpoint.
type Server struct {
	*httptest.Server
	Format string

	mu       sync.Mutex
	queue    []Reply
	requests []Request
	prefixes map[string]bool
	sent     int64
	faults   sync.WaitGroup
	// Default answers when the queue is empty. Nil answers "ok".
	Default func(r Request) Reply
}

// cl100k is the tokenizer the fake reports usage in.
var cl100k = func() tokens.Counter {
	c, err := tokens.Get(tokens.Cl100kBase)
	if err != nil {
		panic(err) // a name the tokens package defines
	}
	return c
}()

// Count counts s with cl100k_base, the tokenizer the fake reports usage in.
func Count(s string) int { return cl100k.Count(s) }

// Counter counts tokens with cl100k_base; it satisfies md.Counter.
type Counter struct{}

// Count returns the number of tokens in s.
func (Counter) Count(s string) int { return Count(s) }

// New starts a fake endpoint speaking format and stops it when t ends.
func New(t testing.TB, format string) *Server {
	s := &Server{Format: format, prefixes: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Push queues replies, answered in order.
func (s *Server) Push(rs ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Requests returns a copy of what was received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Config returns a client configuration for this server.
func (s *Server) Config() llm.Config {
	return llm.Config{
		Provider:   s.Format,
		BaseURL:    s.URL + "/v1",
		APIKey:     "test-key",
		Model:      "test-model",
		Timeout:    30 * time.Second, // generous: race builds on a loaded machine are slow
		MaxRetries: 2,
	}
}

// Options make a client's retries wait no time; sleeps, when not nil,
// records each wait the retry policy chose.
func Options(sleeps *[]time.Duration) []llm.Option {
	var mu sync.Mutex
	return []llm.Option{llm.WithRetryWait(func(ctx context.Context, d time.Duration) error {
		if sleeps != nil {
			mu.Lock()
			*sleeps = append(*sleeps, d)
			mu.Unlock()
		}
		return ctx.Err()
	})}
}

// Client returns a client for this server whose retries wait no time.
func (s *Server) Client(t testing.TB, sleeps *[]time.Duration) llm.Client {
	t.Helper()
	c, err := llm.New(s.Config(), Options(sleeps)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err := json.Unmarshal(body, &req.JSON); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	req.Stream, _ = req.JSON["stream"].(bool)
	req.Kind = kindOf(req.JSON)

	s.mu.Lock()
	var rep Reply
	if len(s.queue) > 0 {
		rep = s.queue[0]
		s.queue = s.queue[1:]
	} else if s.Default != nil {
		s.mu.Unlock()
		rep = s.Default(req)
		s.mu.Lock()
	} else {
		rep = Reply{Text: "ok"}
	}
	if !rep.NoUsage && rep.Status < 300 {
		req.Usage = s.usage(req.JSON, rep)
	}
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status >= 300 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		if rep.RawBody != "" {
			io.WriteString(w, rep.RawBody)
			return
		}
		msg, _ := json.Marshal(rep.Message)
		if s.Format == Anthropic {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":%s}}`, msg)
		} else {
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"server_error","param":null,"code":null}}`, msg)
		}
		return
	}
	if rep.Model == "" {
		rep.Model, _ = req.JSON["model"].(string)
	}
	if rep.RawBody != "" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, rep.RawBody)
		return
	}
	if rep.Endless != "" || rep.Flood > 0 {
		s.faults.Add(1)
		defer s.faults.Done()
		n := s.fault(w, rep, req.Stream)
		s.mu.Lock()
		s.sent += n
		s.mu.Unlock()
		return
	}
	switch {
	case s.Format == Anthropic && req.Stream:
		writeSSE(w, anthropicEvents(rep, req.Usage), rep.CutAfter)
	case s.Format == Anthropic:
		writeJSON(w, anthropicMessage(rep, req.Usage))
	case req.Stream:
		writeSSE(w, openaiChunks(rep, req.Usage), rep.CutAfter)
	default:
		writeJSON(w, openaiCompletion(rep, req.Usage))
	}
}

// kindOf labels a request for figures: "consolidate" when it offers the
// save_memory tool, "extract" when it asks for the extraction schema,
// "chat" otherwise.
func kindOf(body map[string]any) string {
	if tools, ok := body["tools"].([]any); ok {
		for _, t := range tools {
			b, _ := json.Marshal(t)
			if strings.Contains(string(b), `"save_memory"`) {
				return "consolidate"
			}
		}
	}
	b, _ := json.Marshal(body["response_format"])
	b2, _ := json.Marshal(body["output_config"])
	sys, _ := json.Marshal(body["system"])
	msgs, _ := json.Marshal(body["messages"])
	for _, x := range []string{string(b), string(b2), string(sys), string(msgs)} {
		if strings.Contains(x, "user_instructions") {
			return "extract"
		}
	}
	return "chat"
}

// usage counts the prompt as the concatenation of its parts and simulates
// prefix caching: the leading messages shared with any earlier request are
// cached, in 128-token steps once the shared part reaches 1024 tokens, as
// OpenAI does.
func (s *Server) usage(body map[string]any, rep Reply) llm.Usage {
	var parts []string
	if sys, ok := body["system"]; ok {
		b, _ := json.Marshal(sys)
		parts = append(parts, string(b))
	}
	if tools, ok := body["tools"]; ok {
		b, _ := json.Marshal(tools)
		parts = append(parts, string(b))
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		parts = append(parts, string(b))
	}
	total, cached, key := 0, 0, ""
	sharing := true
	for _, p := range parts {
		n := Count(p)
		total += n
		key += p + "\x00"
		if sharing && s.prefixes[key] {
			cached = total
		} else {
			sharing = false
		}
		s.prefixes[key] = true
	}
	if cached < 1024 {
		cached = 0
	}
	cached -= cached % 128
	out := Count(rep.Text)
	for _, tc := range rep.ToolCalls {
		out += Count(tc.Function.Name) + Count(tc.Function.Arguments)
	}
	return llm.Usage{InputTokens: total, OutputTokens: out, CachedTokens: cached, CacheReported: !rep.NoCacheRep}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

type event struct {
	name string // SSE event name; "" for OpenAI
	data any
}

// writeSSE writes events and then, when cut > 0, drops the connection after
// cut events without the terminator.
func writeSSE(w http.ResponseWriter, evs []event, cut int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for i, ev := range evs {
		if cut > 0 && i == cut {
			// Hijack and close so the client sees the stream end abruptly.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, buf, err := hj.Hijack(); err == nil {
					buf.Flush()
					conn.Close()
				}
			}
			return
		}
		var b []byte
		if s, ok := ev.data.(string); ok {
			b = []byte(s)
		} else {
			b, _ = json.Marshal(ev.data)
		}
		if ev.name != "" {
			fmt.Fprintf(w, "event: %s\n", ev.name)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}

// pieces splits text into streaming deltas of about one word.
func pieces(text string) []string {
	var out []string
	for len(text) > 0 {
		i := strings.IndexByte(text[1:], ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

func openaiUsage(u llm.Usage, rep Reply) map[string]any {
	m := map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens}
	if !rep.NoCacheRep {
		m["prompt_tokens_details"] = map[string]any{"cached_tokens": u.CachedTokens}
	}
	return m
}

func openaiToolCalls(rep Reply) []any {
	var calls []any
	for i, tc := range rep.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		calls = append(calls, map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments}})
	}
	return calls
}

func openaiCompletion(rep Reply, u llm.Usage) map[string]any {
	msg := map[string]any{"role": "assistant", "content": rep.Text}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		msg["tool_calls"] = openaiToolCalls(rep)
		finish = "tool_calls"
		if rep.Text == "" {
			msg["content"] = nil
		}
	}
	out := map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": rep.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}}
	if !rep.NoUsage {
		out["usage"] = openaiUsage(u, rep)
	}
	return out
}

func openaiChunks(rep Reply, u llm.Usage) []event {
	chunk := func(delta map[string]any, finish any) event {
		return event{data: map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": rep.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}}
	}
	evs := []event{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, p := range pieces(rep.Text) {
		evs = append(evs, chunk(map[string]any{"content": p}, nil))
	}
	finish := "stop"
	for i, tc := range openaiToolCalls(rep) {
		finish = "tool_calls"
		c := tc.(map[string]any)
		c["index"] = i
		evs = append(evs, chunk(map[string]any{"tool_calls": []any{c}}, nil))
	}
	evs = append(evs, chunk(map[string]any{}, finish))
	if !rep.NoUsage {
		evs = append(evs, event{data: map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
			"model": rep.Model, "choices": []any{}, "usage": openaiUsage(u, rep)}})
	}
	return append(evs, event{data: "[DONE]"})
}

func anthropicUsage(u llm.Usage, rep Reply) map[string]any {
	m := map[string]any{"input_tokens": u.InputTokens - u.CachedTokens, "output_tokens": u.OutputTokens}
	if !rep.NoCacheRep {
		m["cache_read_input_tokens"] = u.CachedTokens
		m["cache_creation_input_tokens"] = 0
	}
	return m
}

func anthropicBlocks(rep Reply) []any {
	var blocks []any
	if rep.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": rep.Text})
	}
	for i, tc := range rep.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d", i+1)
		}
		var input any = map[string]any{}
		if json.Valid([]byte(tc.Function.Arguments)) {
			input = json.RawMessage(tc.Function.Arguments)
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": tc.Function.Name, "input": input})
	}
	return blocks
}

func anthropicStop(rep Reply) string {
	if len(rep.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func anthropicMessage(rep Reply, u llm.Usage) map[string]any {
	out := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": rep.Model,
		"content": anthropicBlocks(rep), "stop_reason": anthropicStop(rep), "stop_sequence": nil}
	if !rep.NoUsage {
		out["usage"] = anthropicUsage(u, rep)
	}
	return out
}

func anthropicEvents(rep Reply, u llm.Usage) []event {
	start := anthropicUsage(u, rep)
	start["output_tokens"] = 1
	evs := []event{{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": rep.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start}}}}
	idx := 0
	if rep.Text != "" {
		evs = append(evs, event{"content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "text", "text": ""}}})
		for _, p := range pieces(rep.Text) {
			evs = append(evs, event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "text_delta", "text": p}}})
		}
		evs = append(evs, event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}})
		idx++
	}
	for i, tc := range rep.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d", i+1)
		}
		evs = append(evs,
			event{"content_block_start", map[string]any{"type": "content_block_start", "index": idx,
				"content_block": map[string]any{"type": "tool_use", "id": id, "name": tc.Function.Name, "input": map[string]any{}}}},
			event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": tc.Function.Arguments}}},
			event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}})
		idx++
	}
	evs = append(evs,
		event{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": anthropicStop(rep), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": u.OutputTokens}}},
		event{"message_stop", map[string]any{"type": "message_stop"}})
	return evs
}

// fault writes an endless or flooded reply and returns the bytes written.
func (s *Server) fault(w http.ResponseWriter, rep Reply, stream bool) int64 {
	cw := &countWriter{w: w}
	fl, _ := w.(http.Flusher)
	textEvent := func(text string) string {
		b, _ := json.Marshal(text)
		if s.Format == Anthropic {
			return `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(b) + "}}\n\n"
		}
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}` + "\n\n"
	}
	if !stream {
		// One JSON body whose text is Flood bytes of "a".
		w.Header().Set("Content-Type", "application/json")
		if s.Format == Anthropic {
			io.WriteString(cw, `{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"end_turn","content":[{"type":"text","text":"`)
		} else {
			io.WriteString(cw, `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
		}
		if !writeRepeated(cw, 'a', rep.Flood) {
			return cw.n
		}
		if s.Format == Anthropic {
			io.WriteString(cw, `"}],"usage":{"input_tokens":1,"output_tokens":1}}`)
		} else {
			io.WriteString(cw, `"}}]}`)
		}
		return cw.n
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if s.Format == Anthropic {
		io.WriteString(cw, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
		io.WriteString(cw, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	}
	if rep.Text != "" {
		io.WriteString(cw, textEvent(rep.Text))
	}
	if rep.Flood > 0 {
		// One event whose text is Flood bytes long.
		head, tail, _ := strings.Cut(textEvent("\x00"), `\u0000`)
		io.WriteString(cw, head)
		if !writeRepeated(cw, 'a', rep.Flood) {
			return cw.n
		}
		io.WriteString(cw, tail)
	}
	for rep.Endless != "" {
		var ev string
		switch {
		case rep.Endless == "text":
			ev = textEvent("la ")
		case s.Format == Anthropic:
			ev = "event: ping\ndata: {\"type\":\"ping\"}\n\n"
		default:
			ev = textEvent("")
		}
		if _, err := io.WriteString(cw, ev); err != nil {
			return cw.n
		}
		if fl != nil && cw.n%(64<<10) < int64(len(ev)) {
			fl.Flush()
		}
	}
	if fl != nil {
		fl.Flush()
	}
	return cw.n
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// writeRepeated writes n bytes of b in 64 KiB pieces; false when the
// client hung up.
func writeRepeated(w io.Writer, b byte, n int64) bool {
	chunk := []byte(strings.Repeat(string(b), 64<<10))
	for n > 0 {
		k := min(n, int64(len(chunk)))
		if _, err := w.Write(chunk[:k]); err != nil {
			return false
		}
		n -= k
	}
	return true
}

// DeltasOnEvents reports whether a client's text deltas are the streamed
// events' texts in order, each delta one event's or several consecutive
// ones' joined: a client may pass on in one piece the events that arrived
// together, which depends on timing.
func DeltasOnEvents(deltas []string, events ...string) bool {
	i := 0
	for _, d := range deltas {
		joined := ""
		for joined != d && i < len(events) && len(joined) < len(d) {
			joined += events[i]
			i++
		}
		if joined != d {
			return false
		}
	}
	return i == len(events) && len(deltas) > 0
}
