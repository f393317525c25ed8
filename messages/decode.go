package messages

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/loomctx/loom/internal/jsonscan"
)

// decodeFast reads a message in its common shape without encoding/json's
// reflection and its map of raw fields: an object whose keys are plain
// (no escapes) and distinct, whose role, name, tool_call_id and
// reasoning_content are strings or null, and whose other values are read
// by the same calls the full decoder makes. ok is false for anything else,
// errors included, and the caller decodes data in full; when ok is true, m
// is what the full decoder gives (FuzzDecodeFastAgrees). A server reads every
// history message of every request, and encoding/json cost more than
// building the turn.
func decodeFast(data []byte) (m Message, ok bool) {
	p := jsonscan.NewCursor(data)
	p.WS()
	if !p.Eat('{') {
		return Message{}, false
	}
	var seen uint8 // the known keys met, one bit each: a repeat goes the slow way
	var r rare     // m's rare fields, pointed at once at the end
	mark := func(bit uint8) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	p.WS()
	if !p.Eat('}') {
		for {
			p.WS()
			key, plain := p.PlainString()
			p.WS()
			if !plain || !p.Eat(':') {
				return Message{}, false
			}
			p.WS()
			start := p.Pos()
			if !p.Skip() {
				return Message{}, false
			}
			raw := data[start:p.Pos()]
			switch string(key) {
			case "role":
				s, ok := roleValue(raw)
				if !ok || !mark(1) {
					return Message{}, false
				}
				m.Role = s
			case "content":
				if !mark(2) {
					return Message{}, false
				}
				if s, ok := stringValue(raw); ok && raw[0] == '"' {
					m.Content.Text = s
				} else {
					// Decoded into a variable of its own: a pointer into m
					// would move every message to the heap.
					var c Content
					if err := c.unmarshal(raw); err != nil {
						return Message{}, false
					}
					m.Content = c
				}
			case "tool_calls":
				var calls []ToolCall
				if !mark(4) || json.Unmarshal(raw, &calls) != nil {
					return Message{}, false
				}
				m.ToolCalls = calls
			case "tool_call_id", "name", "reasoning_content":
				s, ok := stringValue(raw)
				if !ok {
					return Message{}, false
				}
				switch key[0] {
				case 't':
					ok, r.toolCallID = mark(8), s
				case 'n':
					ok, r.name = mark(16), s
				default:
					ok, r.reasoning = mark(32), s
				}
				if !ok {
					return Message{}, false
				}
			default:
				if string(key) == "timestamp" {
					if !mark(64) {
						return Message{}, false
					}
					if t, ok := parseTimestamp(raw); ok {
						m.Time = t
						break
					}
				}
				if _, dup := r.extra[string(key)]; dup || !json.Valid(raw) {
					return Message{}, false
				}
				if r.extra == nil {
					r.extra = make(map[string]json.RawMessage)
				}
				r.extra[string(key)] = append(json.RawMessage(nil), raw...)
			}
			p.WS()
			if p.Eat(',') {
				continue
			}
			if p.Eat('}') {
				break
			}
			return Message{}, false
		}
	}
	p.WS()
	if p.Pos() != len(data) {
		return Message{}, false
	}
	if checkToolCalls(m.ToolCalls) != nil {
		return Message{}, false
	}
	m.setRare(r)
	return m, true
}

// roleValue is stringValue for a role: a known role is its constant,
// with no string allocated for it (see InternRole).
func roleValue(raw []byte) (Role, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		if r, ok := knownRole(raw[1 : len(raw)-1]); ok {
			return r, true
		}
	}
	s, ok := stringValue(raw)
	return Role(s), ok
}

// stringValue reads a JSON string or null (as ""). ok is false for any
// other value, and for a string this fast reader leaves to encoding/json:
// one with a \u escape, a control character or bytes that are not UTF-8.
func stringValue(raw []byte) (string, bool) {
	if string(raw) == "null" {
		return "", true
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	esc := false
	for _, c := range body {
		if c < 0x20 {
			return "", false
		}
		if c == '\\' {
			esc = true
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	if !esc {
		return string(body), true
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i == len(body) {
			return "", false
		}
		switch body[i] {
		case '"', '\\', '/':
			out = append(out, body[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default: // \u, or not an escape at all
			return "", false
		}
	}
	return string(out), true
}
