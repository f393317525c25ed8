package protocol

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/loomctx/loom/llm"
)

// A reply as the Messages API writes it: a message object, or the event
// stream that builds one (message_start; per content block
// content_block_start, its text_delta or input_json_delta events and
// content_block_stop; message_delta with the stop reason and usage; last
// message_stop).

// MessageMeta is what a message object says beside the reply.
type MessageMeta struct {
	ID    string // "msg_…"
	Model string
}

type anthropicUsageOut struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// anthropicUsage is llm's usage in the Messages API's terms, where
// input_tokens leaves out the tokens read from or written to the cache.
func anthropicUsage(u llm.Usage) anthropicUsageOut {
	in := u.InputTokens - u.CachedTokens - u.CacheWriteTokens
	if in < 0 {
		in = 0
	}
	return anthropicUsageOut{InputTokens: in, CacheCreationInputTokens: u.CacheWriteTokens, CacheReadInputTokens: u.CachedTokens, OutputTokens: u.OutputTokens}
}

// StopReason is the Messages API's stop_reason for an upstream's finish
// reason (Chat Completions' or the Messages API's own).
func StopReason(finish string, calls int) string {
	switch finish {
	case "end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded":
		return finish
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	if calls > 0 {
		return "tool_use"
	}
	return "end_turn"
}

type messageObject struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []any             `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        anthropicUsageOut `json:"usage"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// toolUseID is a tool call's id for a tool_use block: the upstream's, or
// one made from the message id when it gave none.
func toolUseID(msgID, id string, i int) string {
	if id != "" {
		return id
	}
	return "toolu_" + msgID + "_" + strconv.Itoa(i)
}

// Message is the whole message object for a reply.
func Message(m MessageMeta, r llm.Response) []byte {
	stop := StopReason(r.FinishReason, len(r.ToolCalls))
	o := messageObject{ID: m.ID, Type: "message", Role: "assistant", Model: m.Model, Content: []any{}, StopReason: &stop, Usage: anthropicUsage(r.Usage)}
	if r.Content != "" {
		o.Content = append(o.Content, textBlock{Type: "text", Text: r.Content})
	}
	for i, tc := range r.ToolCalls {
		o.Content = append(o.Content, toolUseBlock{Type: "tool_use", ID: toolUseID(m.ID, tc.ID, i), Name: tc.Function.Name, Input: objectArgs(tc.Function.Arguments)})
	}
	return marshal(o)
}

// MessagesStream writes a reply as the Messages API's event stream. Start,
// Text and Finish write everything up to message_stop, which Complete
// writes, so a caller can store the turn before it acknowledges it. Each
// method returns the first write error, and does nothing after one.
type MessagesStream struct {
	w       io.Writer
	meta    MessageMeta
	started bool
	inText  bool
	next    int // the next block index
	err     error
}

// NewMessagesStream returns a stream writing to w.
func NewMessagesStream(w io.Writer, m MessageMeta) *MessagesStream {
	return &MessagesStream{w: w, meta: m}
}

// Started reports whether anything was written.
func (s *MessagesStream) Started() bool { return s.started }

func (s *MessagesStream) event(typ string, v any) {
	if s.err == nil {
		s.err = writeEvent(s.w, typ, marshal(v))
	}
}

// Start writes message_start, once. The usage it carries is zero: the
// upstream's figures come with message_delta.
func (s *MessagesStream) Start() error {
	if !s.started {
		s.started = true
		s.event("message_start", map[string]any{"type": "message_start", "message": messageObject{ID: s.meta.ID, Type: "message",
			Role: "assistant", Model: s.meta.Model, Content: []any{}}})
	}
	return s.err
}

// Text writes a piece of the reply's text, opening its block first.
func (s *MessagesStream) Text(delta string) error {
	s.Start()
	if !s.inText {
		s.inText = true
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": s.next, "content_block": textBlock{Type: "text", Text: ""}})
	}
	s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": s.next, "delta": map[string]string{"type": "text_delta", "text": delta}})
	return s.err
}

// Finish closes the text block, writes each tool call as a tool_use block
// with its input in one delta, and message_delta with the stop reason and
// usage: everything but message_stop.
func (s *MessagesStream) Finish(r llm.Response) error {
	s.Start()
	if s.inText {
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": s.next})
		s.inText = false
		s.next++
	}
	for i, tc := range r.ToolCalls {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": s.next,
			"content_block": toolUseBlock{Type: "tool_use", ID: toolUseID(s.meta.ID, tc.ID, i), Name: tc.Function.Name, Input: json.RawMessage("{}")}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": s.next,
			"delta": map[string]string{"type": "input_json_delta", "partial_json": string(objectArgs(tc.Function.Arguments))}})
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": s.next})
		s.next++
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": StopReason(r.FinishReason, len(r.ToolCalls)), "stop_sequence": nil},
		"usage": anthropicUsage(r.Usage)})
	return s.err
}

// Complete writes message_stop.
func (s *MessagesStream) Complete() error {
	s.event("message_stop", map[string]string{"type": "message_stop"})
	return s.err
}

// Fail writes an error event, for a reply that broke after the stream
// began or could not be stored. code is loom's name for the failure; the
// event says api_error, as Anthropic's stream errors name a type, not a
// code.
func (s *MessagesStream) Fail(code, message string) error {
	s.event("error", map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": message}})
	return s.err
}
