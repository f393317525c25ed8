package extract

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Parse reads the model's reply: a JSON object, possibly inside a code
// fence or surrounded by prose. Items may be objects or bare strings; a
// field may be null, missing, or one object instead of a list.
func Parse(reply string) (Output, error) {
	s := strings.TrimSpace(reply)
	for start := strings.IndexByte(s, '{'); start >= 0; {
		var raw map[string]json.RawMessage
		dec := json.NewDecoder(strings.NewReader(s[start:]))
		if err := dec.Decode(&raw); err == nil {
			_, a := raw["user_instructions"]
			_, b := raw["user_profile"]
			if a || b {
				return Output{
					UserInstructions: items(raw["user_instructions"]),
					UserProfile:      items(raw["user_profile"]),
				}, nil
			}
		}
		next := strings.IndexByte(s[start+1:], '{')
		if next < 0 {
			break
		}
		start += 1 + next
	}
	return Output{}, ErrNoJSON
}

func items(raw json.RawMessage) []Item {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var list []json.RawMessage
	if raw[0] != '[' {
		list = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil
	}
	var out []Item
	for _, r := range list {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, Item{Content: s})
			continue
		}
		var obj struct {
			Content      any `json:"content"`
			SupersedesID any `json:"supersedes_id"`
		}
		if json.Unmarshal(r, &obj) != nil {
			continue
		}
		it := Item{}
		if c, ok := obj.Content.(string); ok {
			it.Content = c
		}
		switch v := obj.SupersedesID.(type) {
		case string:
			it.SupersedesID = v
		case float64:
			b, _ := json.Marshal(v)
			it.SupersedesID = string(b)
		}
		out = append(out, it)
	}
	return out
}
