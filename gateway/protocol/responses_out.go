package protocol

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/loomctx/loom/llm"
)

// A reply as the Responses API writes it: a response object, or the typed
// event stream that builds one (response.created, response.in_progress,
// then per output item response.output_item.added, the text or argument
// deltas and their .done events, response.output_item.done, and last
// response.completed or response.incomplete).
//
// Item ids derive from the response's: response "resp_X" has message item
// "msg_X" and function call items "fc_X_0", "fc_X_1", … (ItemIDs), so a
// caller that can read a response id can read its items' too.

// ResponseMeta is what a response object says beside the reply.
type ResponseMeta struct {
	ID        string // "resp_…"
	CreatedAt int64  // Unix seconds
	Model     string
	Turn      *Turn // the request: echoed fields (instructions, tools, …)
}

// ItemIDs returns the message item's id and the function call items'
// prefix for a response id.
func ItemIDs(respID string) (msg, fcPrefix string) {
	x := strings.TrimPrefix(respID, "resp_")
	return "msg_" + x, "fc_" + x + "_"
}

// responseObject is the Responses API's response object.
type responseObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Error              any             `json:"error"`
	IncompleteDetails  any             `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []any           `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              bool            `json:"store"`
	Temperature        *float64        `json:"temperature"`
	Text               any             `json:"text"`
	ToolChoice         any             `json:"tool_choice"`
	Tools              []any           `json:"tools"`
	TopP               json.RawMessage `json:"top_p"`
	Truncation         string          `json:"truncation"`
	Usage              *responseUsage  `json:"usage"`
	Metadata           map[string]any  `json:"metadata"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type messageItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type functionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

func (m ResponseMeta) object(status string) *responseObject {
	o := &responseObject{ID: m.ID, Object: "response", CreatedAt: m.CreatedAt, Status: status, Model: m.Model,
		Output: []any{}, ParallelToolCalls: true, Store: true, Text: map[string]any{"format": map[string]string{"type": "text"}},
		ToolChoice: "auto", Tools: []any{}, TopP: json.RawMessage("null"), Truncation: "disabled", Metadata: map[string]any{}}
	t := m.Turn
	if t == nil {
		return o
	}
	if len(t.System) > 0 {
		s := strings.Join(t.System, "\n\n")
		o.Instructions = &s
	}
	if t.Call.MaxTokens > 0 {
		n := t.Call.MaxTokens
		o.MaxOutputTokens = &n
	}
	if t.Parallel != nil {
		o.ParallelToolCalls = *t.Parallel
	}
	if t.PreviousResponseID != "" {
		p := t.PreviousResponseID
		o.PreviousResponseID = &p
	}
	o.Store = !t.NoStore
	o.Temperature = t.Call.Temperature
	if p, ok := t.Call.Extra["top_p"]; ok {
		o.TopP = p
	}
	if s := t.Call.JSONSchema; s != nil {
		o.Text = map[string]any{"format": map[string]any{"type": "json_schema", "name": s.Name, "schema": s.Schema, "strict": s.Strict}}
	}
	switch c := t.Call.ToolChoice; c.Mode {
	case llm.ToolChoiceNone, llm.ToolChoiceRequired, llm.ToolChoiceAuto:
		o.ToolChoice = string(c.Mode)
	case llm.ToolChoiceFunction:
		o.ToolChoice = map[string]string{"type": "function", "name": c.Name}
	}
	for _, tl := range t.Call.Tools {
		params := tl.Parameters
		if params == nil {
			params = json.RawMessage(`{}`)
		}
		o.Tools = append(o.Tools, map[string]any{"type": "function", "name": tl.Name, "description": tl.Description, "parameters": params, "strict": false})
	}
	return o
}

// responseStatus is a response's status and incomplete_details for an
// upstream's finish reason (Chat Completions' or the Messages API's).
func responseStatus(finish string) (string, any) {
	switch finish {
	case "length", "max_tokens", "model_context_window_exceeded":
		return "incomplete", map[string]string{"reason": "max_output_tokens"}
	case "content_filter", "refusal":
		return "incomplete", map[string]string{"reason": "content_filter"}
	}
	return "completed", nil
}

func usageOf(u llm.Usage) *responseUsage {
	return &responseUsage{InputTokens: u.InputTokens, InputTokensDetails: map[string]int{"cached_tokens": u.CachedTokens},
		OutputTokens: u.OutputTokens, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
		TotalTokens: u.InputTokens + u.OutputTokens}
}

// outputItems are the reply's output items: its text as one message item
// (when there is text, or nothing else), then one function_call item per
// tool call.
func outputItems(respID string, r llm.Response, status string) []any {
	msgID, fc := ItemIDs(respID)
	var out []any
	if r.Content != "" || len(r.ToolCalls) == 0 {
		out = append(out, messageItem{Type: "message", ID: msgID, Status: status, Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: r.Content, Annotations: []any{}, Logprobs: []any{}}}})
	}
	for i, tc := range r.ToolCalls {
		out = append(out, functionCallItem{Type: "function_call", ID: fc + strconv.Itoa(i), CallID: tc.ID, Name: tc.Function.Name,
			Arguments: tc.Function.Arguments, Status: "completed"})
	}
	return out
}

// Response is the whole response object for a reply.
func Response(m ResponseMeta, r llm.Response) []byte {
	status, details := responseStatus(r.FinishReason)
	o := m.object(status)
	o.IncompleteDetails = details
	o.Output = outputItems(m.ID, r, statusOfItem(status))
	o.Usage = usageOf(r.Usage)
	return marshal(o)
}

func statusOfItem(status string) string {
	if status == "completed" {
		return "completed"
	}
	return "incomplete"
}

// ResponsesStream writes a reply as the Responses API's event stream.
// Start, Text and Finish write everything up to the last event; Complete
// writes that one (response.completed or response.incomplete), so a caller
// can store the turn before it acknowledges it. Each method returns the
// first write error, and does nothing after one.
type ResponsesStream struct {
	w       io.Writer
	meta    ResponseMeta
	seq     int
	started bool
	inText  bool
	next    int // the next output index
	reply   llm.Response
	err     error
}

// NewResponsesStream returns a stream writing to w.
func NewResponsesStream(w io.Writer, m ResponseMeta) *ResponsesStream {
	return &ResponsesStream{w: w, meta: m}
}

// Started reports whether anything was written.
func (s *ResponsesStream) Started() bool { return s.started }

func (s *ResponsesStream) event(typ string, fields map[string]any) {
	if s.err != nil {
		return
	}
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	s.err = writeEvent(s.w, typ, marshal(fields))
}

// Start writes response.created and response.in_progress, once.
func (s *ResponsesStream) Start() error {
	if !s.started {
		s.started = true
		s.event("response.created", map[string]any{"response": s.meta.object("in_progress")})
		s.event("response.in_progress", map[string]any{"response": s.meta.object("in_progress")})
	}
	return s.err
}

// Text writes a piece of the reply's text, opening its message item first.
func (s *ResponsesStream) Text(delta string) error {
	s.Start()
	msgID, _ := ItemIDs(s.meta.ID)
	if !s.inText {
		s.inText = true
		s.event("response.output_item.added", map[string]any{"output_index": s.next,
			"item": messageItem{Type: "message", ID: msgID, Status: "in_progress", Role: "assistant", Content: []outputText{}}})
		s.event("response.content_part.added", map[string]any{"item_id": msgID, "output_index": s.next, "content_index": 0,
			"part": outputText{Type: "output_text", Text: "", Annotations: []any{}, Logprobs: []any{}}})
	}
	s.event("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": s.next, "content_index": 0,
		"delta": delta, "logprobs": []any{}})
	return s.err
}

// Finish closes the text item and writes the tool calls, each as its
// item with its arguments in one delta: everything but the last event.
func (s *ResponsesStream) Finish(r llm.Response) error {
	s.reply = r
	if !s.inText && (r.Content != "" || len(r.ToolCalls) == 0) {
		s.Text(r.Content)
	}
	s.Start()
	status, _ := responseStatus(r.FinishReason)
	items := outputItems(s.meta.ID, r, statusOfItem(status))
	if s.inText {
		mi := items[0].(messageItem)
		part := mi.Content[0]
		s.event("response.output_text.done", map[string]any{"item_id": mi.ID, "output_index": s.next, "content_index": 0,
			"text": part.Text, "logprobs": []any{}})
		s.event("response.content_part.done", map[string]any{"item_id": mi.ID, "output_index": s.next, "content_index": 0, "part": part})
		s.event("response.output_item.done", map[string]any{"output_index": s.next, "item": mi})
		s.next++
		s.inText = false
		items = items[1:]
	}
	for _, it := range items {
		fc := it.(functionCallItem)
		open := fc
		open.Arguments, open.Status = "", "in_progress"
		s.event("response.output_item.added", map[string]any{"output_index": s.next, "item": open})
		s.event("response.function_call_arguments.delta", map[string]any{"item_id": fc.ID, "output_index": s.next, "delta": fc.Arguments})
		s.event("response.function_call_arguments.done", map[string]any{"item_id": fc.ID, "output_index": s.next, "arguments": fc.Arguments})
		s.event("response.output_item.done", map[string]any{"output_index": s.next, "item": fc})
		s.next++
	}
	return s.err
}

// Complete writes response.completed (response.incomplete when the reply
// was cut by its token limit or a filter) with the whole response, the
// reply Finish was given.
func (s *ResponsesStream) Complete() error {
	r := s.reply
	status, details := responseStatus(r.FinishReason)
	o := s.meta.object(status)
	o.IncompleteDetails = details
	o.Output = outputItems(s.meta.ID, r, statusOfItem(status))
	o.Usage = usageOf(r.Usage)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	s.event(typ, map[string]any{"response": o})
	return s.err
}

// Fail writes response.failed, for a reply that broke after the stream
// began.
func (s *ResponsesStream) Fail(code, message string) error {
	s.Start()
	o := s.meta.object("failed")
	o.Error = map[string]string{"code": code, "message": message}
	s.event("response.failed", map[string]any{"response": o})
	return s.err
}
