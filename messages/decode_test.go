package messages

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodeSeeds are message shapes a client or a session file sends.
var decodeSeeds = []string{
	`{"role":"user","content":"hi"}`,
	` { "role" : "assistant" , "content" : "line one\nline \"two\"\t\\ /" } `,
	`{"role":"user","content":"caf\u00e9 \ud83d\ude00"}`,
	`{"role":"user","content":"é ☃ 😀","timestamp":"2026-03-01T10:00:01"}`,
	`{"role":"user","content":"x","timestamp":"not a time"}`,
	`{"role":"user","content":"x","timestamp":null}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"","function":{"name":"f"}}]}`,
	`{"role":"tool","tool_call_id":"c","name":"f","content":"ok"}`,
	`{"role":"assistant","content":"a","reasoning_content":"why"}`,
	`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}`,
	`{"role":"user","content":"x","x":[1,{"y":"}"}],"z":-1.5e3,"w":true,"v":null}`,
	`{"role":"user","role":"assistant","content":"dup"}`,
	`{"role":"user","content":"x","x":1,"x":2}`,
	`{"r\u006fle":"user","content":"escaped key"}`,
	`{"role":1,"content":"x"}`,
	`{"role":"user","content":3}`,
	`{"role":"user","content":"bad \x01 control"}`,
	`{"role":"user","content":"x",}`,
	`{"role":"user","content":"x"} trailing`,
	`{"role":"user","content":[1}`,
	`{"role":"user","x":tru}`,
	`{"role":"user","x":01}`,
	`{}`,
	`null`,
	`[]`,
	"{\"role\":\"user\",\"content\":\"\xff\"}",
}

// FuzzDecodeFastAgrees: whenever the fast reader takes a message, the full
// decoder takes it too and reads the same message.
func FuzzDecodeFastAgrees(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeFast(data)
		if !ok {
			return
		}
		var full Message
		if err := full.unmarshalFull(data); err != nil {
			t.Fatalf("fast reader took %q; the full decoder refused it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, full) {
			t.Fatalf("%q:\nfast %#v\nfull %#v", data, fast, full)
		}
	})
}

// The fast reader takes the shapes clients send most; a test that it
// agrees would pass too if it took none.
func TestDecodeFastTakesCommonShapes(t *testing.T) {
	for i, s := range decodeSeeds[:12] {
		if i == 2 || i == 7 || i == 10 {
			continue // \u escapes, a tool call refused, list content with an image: left to encoding/json
		}
		if _, ok := decodeFast([]byte(s)); !ok {
			t.Errorf("fast reader left %s to encoding/json", s)
		}
	}
}

// TestOpenAIAppendJSONAgrees: the hand-written encoder writes what
// encoding/json wrote for the struct, extras after.
func TestOpenAIAppendJSONAgrees(t *testing.T) {
	reference := func(m OpenAIMessage) ([]byte, error) {
		type plain OpenAIMessage
		data, err := marshal(plain(m))
		if err != nil || len(m.Extra) == 0 {
			return data, err
		}
		return appendExtra(data, m.Extra, openAIKeys)
	}
	text := "a <b> & \"c\" \\ \n\t\x01 \u2028\u2029 é 😀 \xff end"
	cases := []OpenAIMessage{
		{Role: RoleSystem, Content: OpenAIContent{Text: text}},
		{Role: RoleUser, Content: OpenAIContent{Text: ""}},
		{Role: RoleAssistant, Content: OpenAIContent{Null: true}, ToolCalls: []ToolCall{NewToolCall("c1", "f", `{"x":"<1>"}`), {ID: "c2", Function: FunctionCall{Name: text}}}},
		{Role: RoleTool, Content: OpenAIContent{Text: "ok"}, ToolCallID: "c1", Name: "f"},
		{Role: RoleUser, Content: OpenAIContent{Parts: []OpenAIPart{textPart(text), {Type: PartImage, ImageURL: &OpenAIImageURL{URL: "data:image/png;base64,AA"}}}}, Name: "ana"},
		{Role: RoleUser, Content: OpenAIContent{Parts: []OpenAIPart{}}},
		{Role: RoleUser, Content: OpenAIContent{Text: "x"}, Extra: map[string]json.RawMessage{"z": json.RawMessage(` [1, 2] `), "a": json.RawMessage(`"<>"`), "role": json.RawMessage(`"x"`)}},
		{Role: Role(text), Content: OpenAIContent{Text: text}, ToolCalls: []ToolCall{}},
	}
	for i, m := range cases {
		want, werr := reference(m)
		got, gerr := m.AppendJSON([]byte("prefix"))
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("case %d: errors %v and %v", i, werr, gerr)
		}
		if werr == nil && string(got) != "prefix"+string(want) {
			t.Errorf("case %d:\ngot  %s\nwant prefix%s", i, got, want)
		}
	}
	bad := OpenAIMessage{Role: RoleUser, Extra: map[string]json.RawMessage{"x": json.RawMessage(`{`)}}
	if _, err := bad.AppendJSON(nil); err == nil {
		t.Error("an extra value that is not JSON was written")
	}
}
