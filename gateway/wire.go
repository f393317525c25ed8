package gateway

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/loomctx/loom/messages"
)

// appendWire appends msgs as a Chat Completions messages array, each
// message's extra keys kept. A message whose OpenAI form is its chat form
// (TestWireAgreesWithOpenAIEncoder lists when) is written by
// messages.AppendJSONL, which is several times faster than the OpenAI
// encoder and encoding/json; any other goes through them.
func appendWire(dst []byte, msgs []messages.Message) ([]byte, error) {
	dst = append(dst, '[')
	for i, m := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendWireMessage(dst, m); err != nil {
			return nil, ferr("messages", "message %d (%s): %v", i, m.Role, err)
		}
	}
	return append(dst, ']'), nil
}

func appendWireMessage(dst []byte, m messages.Message) ([]byte, error) {
	if plainWire(m) {
		m.Time = time.Time{}
		out, err := messages.AppendJSONL(dst, m)
		if err != nil {
			return nil, err
		}
		return out[:len(out)-1], nil // no newline
	}
	wire, err := messages.OpenAIWith([]messages.Message{m}, messages.OpenAIOptions{KeepExtra: true})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wire[0]); err != nil {
		return nil, err
	}
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...), nil
}

// plainWire reports whether m's OpenAI form is its chat form: text
// content, no reasoning, and only the fields its role carries there.
func plainWire(m messages.Message) bool {
	if m.Content.IsList() || m.Reasoning() != "" {
		return false
	}
	if _, ok := m.Extra()["reasoning_content"]; ok {
		return false
	}
	for _, tc := range m.ToolCalls {
		if tc.Type != "function" {
			return false
		}
	}
	switch m.Role {
	case messages.RoleUser:
		return len(m.ToolCalls) == 0 && m.ToolCallID() == ""
	case messages.RoleAssistant:
		return m.ToolCallID() == ""
	case messages.RoleTool:
		return len(m.ToolCalls) == 0 && m.Name() == ""
	}
	return false
}
