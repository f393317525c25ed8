package messages

import (
	"fmt"
	"unicode/utf8"
)

// knownKeys are the JSON keys Message models; an Extra key among them is
// never written, so no key appears twice.
var knownKeys = map[string]bool{"role": true, "content": true, "tool_calls": true, "tool_call_id": true,
	"name": true, "reasoning_content": true, "timestamp": true}

// knownKeysButTime lets a timestamp loom could not read be written back.
var knownKeysButTime = map[string]bool{"role": true, "content": true, "tool_calls": true, "tool_call_id": true,
	"name": true, "reasoning_content": true}

// appendMessage writes m's whole JSON form: the chat part, then the
// timestamp and the Extra keys in key order, on one line.
func appendMessage(dst []byte, m Message) ([]byte, error) {
	dst, err := appendChat(dst, m)
	if err != nil {
		return nil, err
	}
	if m.Time.IsZero() && len(m.Extra()) == 0 {
		return dst, nil
	}
	if !m.Time.IsZero() {
		dst = dst[:len(dst)-1]
		dst = append(dst, `,"timestamp":"`...)
		dst = appendTime(dst, m.Time)
		dst = append(dst, `"}`...)
	}
	skip := knownKeys
	if m.Time.IsZero() && m.Extra()["timestamp"] != nil {
		skip = knownKeysButTime
	}
	return appendExtra(dst, m.Extra(), skip)
}

// appendChat writes the chat part of m's JSON form, what a provider is
// sent and the cache prefix hashes, byte for byte what encoding/json writes
// for it without HTML escaping, several times faster; the prefix hashes of
// a long history are computed from it every turn.
func appendChat(dst []byte, m Message) ([]byte, error) {
	dst = append(dst, `{"role":`...)
	dst = appendString(dst, string(m.Role))
	dst = append(dst, `,"content":`...)
	switch {
	case m.Content.Parts != nil:
		dst = append(dst, '[')
		for i, p := range m.Content.Parts {
			if i > 0 {
				dst = append(dst, ',')
			}
			if p.Type == PartImage {
				if p.Image == nil {
					return nil, fmt.Errorf("image part %d has no image", i)
				}
				dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
				dst = appendString(dst, p.Image.URLString())
				dst = append(dst, "}}"...)
				continue
			}
			dst = append(dst, `{"type":"text","text":`...)
			dst = appendString(dst, p.Text)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	case m.Content.Text == "" && len(m.ToolCalls) > 0:
		dst = append(dst, "null"...)
	default:
		dst = appendString(dst, m.Content.Text)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":`...)
		dst = appendToolCalls(dst, m.ToolCalls)
	}
	for _, f := range [...]struct{ key, val string }{
		{`,"tool_call_id":`, m.ToolCallID()},
		{`,"name":`, m.Name()},
		{`,"reasoning_content":`, m.Reasoning()},
	} {
		if f.val != "" {
			dst = append(dst, f.key...)
			dst = appendString(dst, f.val)
		}
	}
	return append(dst, '}'), nil
}

// appendToolCalls writes tool calls as encoding/json writes []ToolCall.
func appendToolCalls(dst []byte, calls []ToolCall) []byte {
	dst = append(dst, '[')
	for i, tc := range calls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = appendString(dst, tc.ID)
		dst = append(dst, `,"type":`...)
		dst = appendString(dst, tc.Type)
		dst = append(dst, `,"function":{"name":`...)
		dst = appendString(dst, tc.Function.Name)
		dst = append(dst, `,"arguments":`...)
		dst = appendString(dst, tc.Function.Arguments)
		dst = append(dst, "}}"...)
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does with
// HTML escaping off: invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029
// are escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
