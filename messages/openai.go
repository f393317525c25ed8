package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// OpenAIMessage is one entry of a Chat Completions request's "messages"
// array, in loom's own wire form (no SDK type): what OpenAI, and every
// endpoint that copies its API, accepts.
type OpenAIMessage struct {
	Role       Role          `json:"role"`
	Content    OpenAIContent `json:"content"`
	ToolCalls  []ToolCall    `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
	Name       string        `json:"name,omitempty"`
	// Extra keys are written after the others, in key order; see
	// OpenAIOptions.KeepExtra.
	Extra map[string]json.RawMessage `json:"-"`
}

// OpenAIContent is a message's content: Text when Parts is nil (null when
// Null is set), else the list of parts.
type OpenAIContent struct {
	Text  string
	Null  bool
	Parts []OpenAIPart
}

// OpenAIPart is a text or image_url content part.
type OpenAIPart struct {
	Type     PartType        `json:"type"`
	Text     *string         `json:"text,omitempty"`
	ImageURL *OpenAIImageURL `json:"image_url,omitempty"`
}

// OpenAIImageURL is an image_url part's image: a data URL or a remote URL.
type OpenAIImageURL struct {
	URL string `json:"url"`
}

// MarshalJSON writes null, a string, or the list of parts.
func (c OpenAIContent) MarshalJSON() ([]byte, error) {
	switch {
	case c.Parts != nil:
		return marshal(c.Parts)
	case c.Null:
		return []byte("null"), nil
	}
	return appendString(nil, c.Text), nil
}

// MarshalJSON writes the message with its Extra keys, which never replace
// a key loom wrote.
func (m OpenAIMessage) MarshalJSON() ([]byte, error) {
	return m.AppendJSON(nil)
}

// openAIKeys are the keys an OpenAIMessage writes itself.
var openAIKeys = map[string]bool{"role": true, "content": true, "tool_calls": true, "tool_call_id": true, "name": true}

// AppendJSON appends the message's JSON form to dst: what MarshalJSON
// returns, written directly, byte for byte what encoding/json wrote for
// the struct (TestOpenAIAppendJSONAgrees), without encoding/json's
// reflection and its second pass over the content (a long system prompt
// made that most of a message list's encoding).
func (m OpenAIMessage) AppendJSON(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"role":`...)
	dst = appendString(dst, string(m.Role))
	dst = append(dst, `,"content":`...)
	switch {
	case m.Content.Parts != nil:
		parts, err := marshal(m.Content.Parts)
		if err != nil {
			return nil, err
		}
		dst = append(dst, parts...)
	case m.Content.Null:
		dst = append(dst, "null"...)
	default:
		dst = appendLongString(dst, m.Content.Text)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":`...)
		dst = appendToolCalls(dst, m.ToolCalls)
	}
	if m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = appendString(dst, m.ToolCallID)
	}
	if m.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, m.Name)
	}
	dst = append(dst, '}')
	if len(m.Extra) == 0 {
		return dst, nil
	}
	obj, err := appendExtra(dst[start:], m.Extra, openAIKeys)
	if err != nil {
		return nil, err
	}
	return append(dst[:start], obj...), nil
}

// OpenAIOptions tune the OpenAI form.
type OpenAIOptions struct {
	// KeepExtra sends each message's Extra keys as they are: for a gateway
	// passing a client's fields through. Off, the messages hold only what
	// Chat Completions defines, since OpenAI refuses a message with a key
	// it does not know (as a stored session's keys would be).
	KeepExtra bool
}

// OpenAI converts messages to the Chat Completions messages array.
// Reasoning text and times are left out: Chat Completions has no field for
// them. System and tool messages keep text only, with "[image]" for an
// image.
func OpenAI(msgs []Message) ([]OpenAIMessage, error) {
	return OpenAIWith(msgs, OpenAIOptions{})
}

// OpenAIWith is OpenAI with options.
func OpenAIWith(msgs []Message, opts OpenAIOptions) ([]OpenAIMessage, error) {
	out := make([]OpenAIMessage, 0, len(msgs))
	for i, m := range msgs {
		p, err := openAIMessage(m)
		if err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		if opts.KeepExtra {
			p.Extra = m.Extra()
		}
		out = append(out, p)
	}
	return out, nil
}

// OpenAI converts the built turn; see the package-level OpenAI.
func (r *Result) OpenAI() ([]OpenAIMessage, error) {
	return OpenAI(r.Messages)
}

func openAIMessage(m Message) (OpenAIMessage, error) {
	out := OpenAIMessage{Role: m.Role}
	switch m.Role {
	case RoleSystem, RoleDeveloper:
		out.Content = textContent(m.Content)
	case RoleUser:
		if m.Content.IsList() {
			out.Content.Parts = make([]OpenAIPart, 0, len(m.Content.Parts))
			for i, p := range m.Content.Parts {
				if p.Type == PartImage {
					if p.Image == nil {
						return OpenAIMessage{}, fmt.Errorf("image part %d has no image", i)
					}
					out.Content.Parts = append(out.Content.Parts, OpenAIPart{Type: PartImage, ImageURL: &OpenAIImageURL{URL: p.Image.URLString()}})
				} else {
					out.Content.Parts = append(out.Content.Parts, textPart(p.Text))
				}
			}
		} else {
			out.Content.Text = m.Content.Text
		}
		out.Name = m.Name()
	case RoleAssistant:
		switch {
		case m.Content.IsList():
			out.Content.Parts = make([]OpenAIPart, 0, len(m.Content.Parts))
			for _, p := range m.Content.Parts {
				if p.Type == PartImage {
					return OpenAIMessage{}, fmt.Errorf("assistant content cannot hold an image")
				}
				out.Content.Parts = append(out.Content.Parts, textPart(p.Text))
			}
		case m.Content.Text != "" || len(m.ToolCalls) == 0:
			out.Content.Text = m.Content.Text
		default:
			out.Content.Null = true
		}
		for _, tc := range m.ToolCalls {
			if tc.Type == "" {
				tc.Type = "function"
			}
			out.ToolCalls = append(out.ToolCalls, tc)
		}
		out.Name = m.Name()
	case RoleTool:
		out.Content = textContent(m.Content)
		out.ToolCallID = m.ToolCallID()
	default:
		return OpenAIMessage{}, fmt.Errorf("unknown role %q", m.Role)
	}
	return out, nil
}

func textPart(s string) OpenAIPart { return OpenAIPart{Type: PartText, Text: &s} }

// textContent keeps list content as text parts, an image as "[image]".
func textContent(c Content) OpenAIContent {
	if !c.IsList() {
		return OpenAIContent{Text: c.Text}
	}
	parts := make([]OpenAIPart, 0, len(c.Parts))
	for _, p := range c.Parts {
		text := p.Text
		if p.Type == PartImage {
			text = imagePlaceholder
		}
		parts = append(parts, textPart(text))
	}
	return OpenAIContent{Parts: parts}
}

// appendExtra adds extra's keys, in key order and compacted, to the JSON
// object obj; keys in skip are left out.
func appendExtra(obj []byte, extra map[string]json.RawMessage, skip map[string]bool) ([]byte, error) {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return obj, nil
	}
	slices.Sort(keys)
	obj = obj[:len(obj)-1]
	for _, k := range keys {
		if len(obj) > 1 {
			obj = append(obj, ',')
		}
		obj = appendString(obj, k)
		obj = append(obj, ':')
		var err error
		if obj, err = appendCompact(obj, extra[k]); err != nil {
			return nil, fmt.Errorf("extra key %q: %w", k, err)
		}
	}
	return append(obj, '}'), nil
}

// appendCompact appends raw JSON with its insignificant space removed.
func appendCompact(dst []byte, raw json.RawMessage) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
