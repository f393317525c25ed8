package protocol

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/messages"
)

// Seeds for the fast readers: common shapes, and every way they hand over
// to encoding/json (escapes, non-strings, nulls, repeated and differently
// cased keys, non-objects).
var fastSeeds = []string{
	`{"role":"user","content":"hi"}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}`,
	`{"role":"user","role":"assistant"}`,
	`{"role":5,"role":"user"}`,
	`{"role":"user","role":null}`,
	`{"ROLE":"user","Role":"system"}`,
	`{"r\u006fle":"user"}`,
	`{"role":"us\u0065r"}`,
	`{"role":"a\"b"}`,
	`{"role":"caf` + "\xc3\xa9" + `"}`,
	`{"role":"` + "\xff" + `"}`,
	`{"role":{"x":1}}`,
	`{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}`,
	`{"type":"function_call_output","call_id":"c1","output":"done"}`,
	`{"type":"function_call_output","call_id":"c1","OUTPUT":[{"type":"input_text","text":"x"}]}`,
	`{"type":"item_reference","id":"msg_1"}`,
	`{"Type":"message","ID":"x","CALL_ID":"y","Name":null,"arguments":"z","other":[1,2]}`,
	`{"name":1}`,
	`{ "role" : "user" , "content" : "x" }`,
	`{}`, `null`, `[]`, `"user"`, `5`, `true`,
}

// roleOf decodes as encoding/json does into a struct of one field Role.
func FuzzRoleOfAgrees(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || len(b) == 0 || b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' {
			return // roleOf reads list elements, which start with their value
		}
		var want struct {
			Role string `json:"role"`
		}
		werr := json.Unmarshal(b, &want)
		var got string
		ok := roleOf(b, &got)
		if ok != (werr == nil) || (ok && got != want.Role) {
			t.Fatalf("roleOf(%q) = %q, %v; encoding/json: %q, %v", b, got, ok, want.Role, werr)
		}
	})
}

// responsesItem.decode decodes as encoding/json does, errors included.
func FuzzItemDecodeAgrees(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || len(b) == 0 || b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' {
			return
		}
		var want, got responsesItem
		werr := json.Unmarshal(b, &want)
		gerr := got.decode(b)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("decode(%q): error %v; encoding/json: %v", b, gerr, werr)
		}
		if werr == nil && (got.Type != want.Type || got.ID != want.ID || got.Role != want.Role || got.CallID != want.CallID ||
			got.Name != want.Name || got.Arguments != want.Arguments || string(got.Output) != string(want.Output)) {
			t.Fatalf("decode(%q) = %+v; encoding/json: %+v", b, got, want)
		}
	})
}

// unmarshalString decodes as json.Unmarshal into a string does, keeping
// what the string held for null.
func FuzzUnmarshalStringAgrees(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\nb"`, `"\u00e9"`, `null`, `5`, `[]`, `"` + "\xff" + `"`, `"x` + "\x01" + `"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		want, got := "was", "was"
		werr := json.Unmarshal(b, &want)
		gerr := unmarshalString(b, &got)
		if (werr == nil) != (gerr == nil) || got != want {
			t.Fatalf("unmarshalString(%q) = %q, %v; encoding/json: %q, %v", b, got, gerr, want, werr)
		}
	})
}

// textParts, where it reads a user turn's block list, gives the message
// anthropicUser makes of the decoded blocks; where it reads a Responses
// message's part list, the parts decodeParts makes.
func FuzzTextPartsAgrees(f *testing.F) {
	for _, s := range []string{
		`[{"type":"text","text":"a"},{"text":"b","type":"text"}]`, `[]`, `[{"type":"text","text":""}]`,
		`[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]`, `[{"type":"text","text":"a\nb"}]`,
		`[{"type":"text","text":null}]`, `[{"type":"text","type":"text","text":"a"}]`, `[{"Type":"text","text":"a"}]`,
		`[{"type":"image","text":"a"}]`, `[{"type":"text"}]`, `[ { "type" : "text" , "text" : "a" } ]`, `{}`, `"a"`,
		`[{"type":"input_text","text":"a"},{"text":"b","type":"output_text"}]`, `[{"type":"refusal","text":"a"}]`,
		`[{"type":"input_text","text":"a","TEXT":"b"}]`, `[{"type":"input_image","text":"a"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || len(raw) == 0 || raw[0] != '[' || raw[len(raw)-1] != ']' {
			return // the reader gets jsonscan.Lookup's value: trimmed, checked
		}
		n, _, _ := jsonscan.ArrayLen(raw, -1)
		if parts, ok := textParts(raw, n, responsesTextType); ok {
			var slow Turn
			want, err := slow.decodeParts("input[0].content", raw)
			if err != nil {
				t.Fatalf("textParts(%q) read it as Responses parts, decodeParts refuses it: %v", raw, err)
			}
			if a, b := fmt.Sprintf("%#v", parts), fmt.Sprintf("%#v", want); a != b {
				t.Fatalf("textParts(%q), Responses parts:\n%s\ndecodeParts:\n%s", raw, a, b)
			}
		}
		parts, ok := textParts(raw, n, anthropicTextType)
		if !ok {
			return
		}
		var slow Turn
		blocks, err := decodeList[anthropicBlock](&slow, "content", raw)
		if err == nil {
			err = slow.anthropicUser("messages[0]", blocks)
		}
		if err != nil {
			t.Fatalf("textParts(%q) read it, the block decoder refuses it: %v", raw, err)
		}
		var fast Turn
		if len(parts) > 0 {
			fast.Messages = append(fast.Messages, messages.Message{Role: messages.RoleUser, Content: content(parts)})
		}
		if a, b := fmt.Sprintf("%#v", fast.Messages), fmt.Sprintf("%#v", slow.Messages); a != b {
			t.Fatalf("textParts(%q):\n%s\nthe block decoder:\n%s", raw, a, b)
		}
	})
}
