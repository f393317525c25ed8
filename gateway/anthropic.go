package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/loomctx/loom/gateway/protocol"
	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/internal/redact"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/server"
)

// An Anthropic upstream: the Chat Completions request is translated to the
// Messages API and sent through llm's own Anthropic client (whose encoder
// is messages.Anthropic, with cache_control after the system prompt); the
// reply, and its event stream, are written back in Chat Completions shapes.
//
// What translates: model, max_tokens / max_completion_tokens, temperature,
// top_p, stop (as stop_sequences), tools, tool_choice, response_format
// json_schema (as output_config), user (as metadata.user_id), stream and
// stream_options.include_usage. Fields with no Messages API counterpart
// (logprobs, presence_penalty, seed, …) are not sent; n above 1 is refused.

// anthropicCall is a translated request.
type anthropicCall struct {
	req          llm.Request
	includeUsage bool
}

// translate makes the llm request for an Anthropic upstream from the
// client's fields and loom's built messages (system first).
func translate(q *request, final []messages.Message) (*anthropicCall, error) {
	c := &anthropicCall{}
	r := &c.req
	r.System = final[0].Content.String()
	r.Messages = final[1:]
	r.Extra = map[string]json.RawMessage{}
	f := rawFields(q.fields)
	if q.user != "" {
		r.Extra["metadata"], _ = json.Marshal(map[string]string{"user_id": q.user})
	}
	for _, step := range []func(rawFields, *llm.Request) error{translateSampling, translateTools, translateToolChoice, translateResponseFormat} {
		if err := step(f, r); err != nil {
			return nil, err
		}
	}
	if f.has("stream_options") {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(f["stream_options"], &so); err != nil {
			return nil, ferr("stream_options", "must be an object")
		}
		c.includeUsage = so.IncludeUsage
	}
	return c, nil
}

// rawFields are a request's top-level members, undecoded.
type rawFields map[string]json.RawMessage

// has reports whether the client sent k with a value other than null.
func (f rawFields) has(k string) bool { v, ok := f[k]; return ok && string(v) != "null" }

// translateSampling carries model, the token limit, temperature, top_p and
// stop; n must be 1.
func translateSampling(f rawFields, r *llm.Request) error {
	if f.has("model") {
		if err := json.Unmarshal(f["model"], &r.Model); err != nil {
			return ferr("model", "must be a string")
		}
	}
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		if f.has(k) {
			var n int
			if err := json.Unmarshal(f[k], &n); err != nil || n < 1 {
				return ferr(k, "must be a positive integer")
			}
			r.MaxTokens = n
			break
		}
	}
	if f.has("n") {
		var n int
		if err := json.Unmarshal(f["n"], &n); err != nil || n != 1 {
			return ferr("n", "an Anthropic upstream gives one choice; n must be 1")
		}
	}
	for _, k := range []string{"temperature", "top_p"} {
		if f.has(k) {
			var x float64
			if err := json.Unmarshal(f[k], &x); err != nil || math.IsNaN(x) {
				return ferr(k, "must be a number")
			}
			r.Extra[k] = f[k]
		}
	}
	if f.has("stop") {
		var one string
		var many []string
		switch {
		case json.Unmarshal(f["stop"], &one) == nil:
			many = []string{one}
		case json.Unmarshal(f["stop"], &many) == nil:
		default:
			return ferr("stop", "must be a string or a list of strings")
		}
		if len(many) > 0 {
			r.Extra["stop_sequences"], _ = json.Marshal(many)
		}
	}
	return nil
}

// translateTools carries function tools; a list longer than
// protocol.MaxItems is refused before it is decoded.
func translateTools(f rawFields, r *llm.Request) error {
	if !f.has("tools") {
		return nil
	}
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if _, more, _ := jsonscan.ArrayLen(f["tools"], protocol.MaxItems); more {
		return ferr("tools", "more than %d tools", protocol.MaxItems)
	}
	if err := json.Unmarshal(f["tools"], &tools); err != nil {
		return ferr("tools", "must be a list of function tools")
	}
	for i, t := range tools {
		if t.Type != "function" || t.Function.Name == "" {
			return ferr(fmt.Sprintf("tools[%d]", i), "an Anthropic upstream takes function tools with a name")
		}
		schema, err := protocol.ToolSchema(t.Function.Parameters)
		if err != nil {
			return ferr(fmt.Sprintf("tools[%d].function.parameters", i), "%v", err)
		}
		r.Tools = append(r.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: schema})
	}
	return nil
}

// translateToolChoice carries auto, none, required or a named function.
func translateToolChoice(f rawFields, r *llm.Request) error {
	if !f.has("tool_choice") {
		return nil
	}
	var mode string
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	switch {
	case json.Unmarshal(f["tool_choice"], &mode) == nil:
		switch mode {
		case "auto":
			r.ToolChoice.Mode = llm.ToolChoiceAuto
		case "none":
			r.ToolChoice.Mode = llm.ToolChoiceNone
		case "required":
			r.ToolChoice.Mode = llm.ToolChoiceRequired
		default:
			return ferr("tool_choice", "%q is not one of auto, none, required", mode)
		}
	case json.Unmarshal(f["tool_choice"], &named) == nil && named.Type == "function" && named.Function.Name != "":
		r.ToolChoice = llm.ForceTool(named.Function.Name)
	default:
		return ferr("tool_choice", "must be auto, none, required or a named function")
	}
	return nil
}

// translateResponseFormat carries a json_schema format as output_config;
// text and json_object need nothing.
func translateResponseFormat(f rawFields, r *llm.Request) error {
	if !f.has("response_format") {
		return nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string         `json:"name"`
			Schema map[string]any `json:"schema"`
			Strict bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(f["response_format"], &rf); err != nil {
		return ferr("response_format", "must be an object with a type")
	}
	switch rf.Type {
	case "text", "json_object":
	case "json_schema":
		if rf.JSONSchema.Schema == nil {
			return ferr("response_format.json_schema.schema", "is required")
		}
		r.JSONSchema = &llm.JSONSchema{Name: rf.JSONSchema.Name, Schema: rf.JSONSchema.Schema, Strict: rf.JSONSchema.Strict}
	default:
		return ferr("response_format.type", "%q is not one of text, json_object, json_schema", rf.Type)
	}
	return nil
}

// finishReason maps the Messages API's stop_reason to Chat Completions'.
func finishReason(stop string, calls int) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	if calls > 0 {
		return "tool_calls"
	}
	return "stop"
}

// wireUsage is Chat Completions' usage object.
func wireUsage(u llm.Usage) map[string]any {
	out := map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens}
	if u.CacheReported {
		out["prompt_tokens_details"] = map[string]int{"cached_tokens": u.CachedTokens}
	}
	return out
}

// jsonString appends s as a JSON string, HTML characters left as they are.
func jsonString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return append(dst, bytes.TrimRight(b.Bytes(), "\n")...)
}

// wireCalls is a reply's tool calls in Chat Completions form; in a stream
// chunk each carries its index.
func wireCalls(calls []messages.ToolCall, indexed bool) []map[string]any {
	out := make([]map[string]any, len(calls))
	for i, tc := range calls {
		m := map[string]any{"id": tc.ID, "type": "function", "function": map[string]string{"name": tc.Function.Name, "arguments": tc.Function.Arguments}}
		if indexed {
			m["index"] = i
		}
		out[i] = m
	}
	return out
}

// forwardAnthropic sends the translated request and writes the reply back
// as a chat completion, or as its chunks when the client streams.
func (g *Gateway) forwardAnthropic(w http.ResponseWriter, r *http.Request, st *upstream, q *request, t *turn) {
	b := t.built
	call, err := translate(q, b.msgs)
	if err != nil {
		var fe *fieldError
		errors.As(err, &fe)
		badRequest(w, fe.param, "%s", fe.msg)
		return
	}
	call.req.Model = st.cfg.Gateway.UpstreamModel(call.req.Model, st.lc.Model)
	call.req.SystemCacheAt = b.sys.cacheAt()
	client := st.anthropic
	ck, err := g.clientKey(r, st)
	if err != nil {
		keyRefused(w, err)
		return
	}
	if ck != "" { // no key of loom's own: the client's, as its x-api-key
		lc := st.lc
		lc.APIKey, lc.MaxRetries = ck, -1
		if c, err := llm.New(lc, llm.WithHTTPClient(g.hc)); err == nil {
			client = c
		}
	}
	g.loomHeaders(w, q, b)
	model := call.req.Model
	if model == "" {
		model = st.lc.Model
	}
	id := "chatcmpl-" + server.RequestID(r)
	created := g.opts.Now().Unix()
	var rep reply
	if !q.stream {
		resp, err := client.Complete(r.Context(), call.req)
		if err != nil {
			g.upstreamFailed(w, r, st, err, ck)
			return
		}
		if resp.Model != "" {
			model = resp.Model
		}
		msg := map[string]any{"role": "assistant", "content": nil}
		if resp.Content != "" || len(resp.ToolCalls) == 0 {
			msg["content"] = resp.Content
		}
		if len(resp.ToolCalls) > 0 {
			msg["tool_calls"] = wireCalls(resp.ToolCalls, false)
		}
		if resp.Reasoning != "" {
			msg["reasoning_content"] = resp.Reasoning
		}
		out := map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(resp.FinishReason, len(resp.ToolCalls))}},
			"usage":   wireUsage(resp.Usage)}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(out)
		rep.text, rep.calls = []byte(resp.Content), resp.ToolCalls
		// The completion goes out once the turn is stored.
		if err := t.record(r.Context(), rep.sessionReply()); err != nil {
			g.failure(w, r, frontOpenAI, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.WriteHeader(http.StatusOK)
		w.Write(buf.Bytes())
		return
	}

	// Streamed: the status line waits for the first text, so an error
	// before it (a 429, say) is still answered with its own status.
	rc := http.NewResponseController(w)
	head := []byte(`data: {"id":`)
	head = jsonString(head, id)
	head = append(head, `,"object":"chat.completion.chunk","created":`...)
	head = strconv.AppendInt(head, created, 10)
	head = append(head, `,"model":`...)
	head = jsonString(head, model)
	head = append(head, `,"choices":[{"index":0,"delta":`...)
	started, gone := false, false
	var line []byte
	send := func(delta []byte, finish string) {
		if gone {
			return
		}
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
			line = append(append(line[:0], head...), `{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
			if _, err := w.Write(line); err != nil {
				gone = true
				return
			}
		}
		line = append(append(line[:0], head...), delta...)
		if finish == "" {
			line = append(line, `,"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
		} else {
			line = append(line, `,"logprobs":null,"finish_reason":"`+finish+`"}]}`+"\n\n"...)
		}
		if _, err := w.Write(line); err != nil {
			gone = true
			return
		}
		rc.Flush()
	}
	var delta []byte
	resp, err := client.Stream(r.Context(), call.req, func(text string) {
		delta = jsonString(append(delta[:0], `{"content":`...), text)
		send(append(delta, '}'), "")
	})
	rep.text, rep.calls = []byte(resp.Content), resp.ToolCalls
	if err != nil {
		if !started { // nothing reached the client: answer the error, store nothing
			if r.Context().Err() == nil {
				g.upstreamFailed(w, r, st, err, ck)
			}
			return
		}
		rep.cut = "client disconnected"
		if r.Context().Err() == nil {
			rc.Flush()
			rep.cut = "upstream stream broke: " + redact.String(err.Error())
		}
		if err := t.record(r.Context(), rep.sessionReply()); err != nil {
			g.log.Warn("gateway: turn not stored", "request_id", server.RequestID(r), "session", q.key, "err", err)
		}
		return
	}
	if len(resp.ToolCalls) > 0 {
		tc, _ := json.Marshal(map[string]any{"tool_calls": wireCalls(resp.ToolCalls, true)})
		send(tc, "")
	}
	send([]byte(`{}`), finishReason(resp.FinishReason, len(resp.ToolCalls)))
	if call.includeUsage && !gone {
		u, _ := json.Marshal(wireUsage(resp.Usage))
		line = append(append(append(line[:0], head[:bytes.LastIndex(head, []byte(`[{`))]...), `[],"usage":`...), u...)
		line = append(line, "}\n\n"...)
		w.Write(line)
	}
	if gone {
		rep.cut = "client disconnected"
	}
	// [DONE] acknowledges the turn: it goes out once the turn is stored.
	if err := t.record(r.Context(), rep.sessionReply()); err != nil {
		g.log.Warn("gateway: turn not stored", "request_id", server.RequestID(r), "session", q.key, "err", err)
		if !gone {
			streamFailure(w, err)
		}
		return
	}
	if !gone {
		w.Write([]byte("data: [DONE]\n\n"))
		rc.Flush()
	}
}

// upstreamFailed answers for an Anthropic upstream's error in OpenAI's
// shape: its status relayed (a 429 with its Retry-After), 502 when it did
// not answer.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, st *upstream, err error, clientKey string) {
	var ae *llm.APIError
	if errors.As(err, &ae) {
		if ae.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ae.RetryAfter.Seconds()))))
		}
		typ := "upstream_error"
		switch {
		case ae.StatusCode == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case ae.StatusCode/100 == 4:
			typ = "invalid_request_error"
		}
		// llm's client masked the key it sent; the credential patterns
		// go too, as on the OpenAI wire.
		msg := redact.Credentials(ae.Message, sentKeys(st, clientKey)...)
		if msg == "" {
			msg = http.StatusText(ae.StatusCode)
		}
		writeError(w, ae.StatusCode, typ, "upstream_"+strconv.Itoa(ae.StatusCode), "", "upstream %s: %s", st.host, msg)
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return
	}
	msg := redact.String(err.Error())
	var ue *llm.UnreachableError
	if errors.As(err, &ue) {
		msg = redact.String(ue.Err.Error())
		if ue.Timeout {
			msg = "timed out"
		}
	}
	g.log.Warn("gateway: upstream failed", "request_id", server.RequestID(r), "upstream", st.host, "err", msg)
	writeError(w, http.StatusBadGateway, "upstream_error", "upstream_unreachable", "", "upstream %s did not answer: %s", st.host, msg)
}
