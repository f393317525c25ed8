package messages

import (
	"encoding/json"
	"testing"
)

// referenceJSON encodes m with encoding/json, the behaviour appendMessage
// must match byte for byte.
func referenceJSON(t *testing.T, m Message) string {
	t.Helper()
	w := wireMessage{Role: m.Role, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name, Reasoning: m.Reasoning}
	var content any = m.Content.Text
	switch {
	case m.Content.Parts != nil:
		parts := []wirePart{}
		for _, p := range m.Content.Parts {
			if p.Type == PartImage {
				parts = append(parts, wirePart{Type: PartImage, ImageURL: &wireURL{URL: p.Image.URLString()}})
			} else {
				text := p.Text
				parts = append(parts, wirePart{Type: PartText, Text: &text})
			}
		}
		content = parts
	case m.Content.Text == "" && len(m.ToolCalls) > 0:
		content = nil
	}
	raw, err := marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	w.Content = raw
	out, err := marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func FuzzAppendMessage(f *testing.F) {
	f.Add("plain", "x", "", "")
	f.Add("<b>&amp;</b>\u2028\u2029\x00\x1f\b\f\t\r\n\"\\", "a\xffb", "id", "{\"k\":1}")
	f.Add("", "é€𝄞", "c1", "")
	f.Fuzz(func(t *testing.T, text, other, id, args string) {
		for _, m := range []Message{
			{Role: RoleUser, Content: TextContent(text), Name: other},
			{Role: RoleAssistant, Content: TextContent(text), Reasoning: other, ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: other, Arguments: args}}}},
			{Role: RoleUser, Content: Content{Parts: []Part{{Type: PartText, Text: text}, {Type: PartImage, Image: &Image{URL: other}}, {Type: PartImage, Image: &Image{MIME: "image/png", Data: "QUJD"}}}}},
			{Role: RoleTool, Content: Content{Parts: []Part{}}, ToolCallID: id},
		} {
			got, err := appendMessage(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			if want := referenceJSON(t, m); string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		}
	})
}

func TestMessageJSONRoundTrip(t *testing.T) {
	in := `{"role":"assistant","content":"<a> & b","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}],"name":"bot"}`
	var m Message
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// json.Marshal escapes HTML in a Marshaler's output; the neutral writers
	// (WriteJSONL, Result.JSON) do not.
	if want := `{"role":"assistant","content":"\u003ca\u003e \u0026 b","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}],"name":"bot"}`; string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
