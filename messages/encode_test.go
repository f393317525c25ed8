package messages

import (
	"encoding/json"
	"strings"
	"testing"
)

// wireMessage is the chat part of a message as encoding/json writes it.
type wireMessage struct {
	Role       Role            `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Reasoning  string          `json:"reasoning_content,omitempty"`
}

// referenceJSON encodes m with encoding/json, the behaviour appendMessage
// must match byte for byte.
func referenceJSON(t *testing.T, m Message) string {
	t.Helper()
	w := wireMessage{Role: m.Role, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID(), Name: m.Name(), Reasoning: m.Reasoning()}
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
			Message{Role: RoleUser, Content: TextContent(text)}.WithName(other),
			Message{Role: RoleAssistant, Content: TextContent(text), ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: other, Arguments: args}}}}.WithReasoning(other),
			{Role: RoleUser, Content: Content{Parts: []Part{{Type: PartText, Text: text}, {Type: PartImage, Image: &Image{URL: other}}, {Type: PartImage, Image: &Image{MIME: "image/png", Data: "QUJD"}}}}},
			Message{Role: RoleTool, Content: Content{Parts: []Part{}}}.WithToolCallID(id),
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

// A message keeps what loom does not model: nanobot's naive timestamp reads
// as UTC and is written back as it came, without a zone (it is nanobot's
// local time, not UTC); unknown keys come back in key order, compacted, and
// an unreadable timestamp is kept as it was.
func TestMessageExtraRoundTrip(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"role":"user","content":"hi","timestamp":"2026-03-01T10:15:30.123456"}`,
			`{"role":"user","content":"hi","timestamp":"2026-03-01T10:15:30.123456"}`},
		{`{"role":"user","content":"hi","timestamp":"2026-03-01T10:15:30+02:00"}`,
			`{"role":"user","content":"hi","timestamp":"2026-03-01T10:15:30+02:00"}`},
		{`{"zeta": {"a": [1, 2]}, "role":"assistant","content":"x","thinking_blocks":[{"type":"thinking"}],"timestamp":"2026-03-01 10:15:30"}`,
			`{"role":"assistant","content":"x","timestamp":"2026-03-01 10:15:30","thinking_blocks":[{"type":"thinking"}],"zeta":{"a":[1,2]}}`},
		{`{"role":"user","content":"x","timestamp":1700000000}`,
			`{"role":"user","content":"x","timestamp":1700000000}`},
		{`{"role":"user","content":"x","timestamp":null}`,
			`{"role":"user","content":"x"}`},
	} {
		var m Message
		if err := json.Unmarshal([]byte(c.in), &m); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		out, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != c.want {
			t.Errorf("%s\ngot  %s\nwant %s", c.in, out, c.want)
		}
		// The chat form, what a provider is sent and the cache hashes,
		// holds neither the time nor the extra keys.
		chat, _ := appendChat(nil, m)
		if strings.Contains(string(chat), "timestamp") || strings.Contains(string(chat), "zeta") {
			t.Errorf("chat form %s", chat)
		}
	}
	if m := (Message{Role: RoleUser}.WithExtra(map[string]json.RawMessage{"x": json.RawMessage("{bad")})); true {
		if _, err := m.MarshalJSON(); err == nil {
			t.Error("invalid extra JSON written")
		}
	}
}

// A gateway's messages keep their extra keys in the OpenAI form when asked,
// never in place of a key loom writes; by default they are left out.
func TestOpenAIKeepExtra(t *testing.T) {
	m := Message{Role: RoleUser, Content: TextContent("hi"), Time: fixedNow}.WithExtra(map[string]json.RawMessage{"cache_control": json.RawMessage(`{"type":"ephemeral"}`), "role": json.RawMessage(`"system"`)})
	for _, c := range []struct {
		keep bool
		want string
	}{
		{false, `[{"role":"user","content":"hi"}]`},
		{true, `[{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}}]`},
	} {
		out, err := OpenAIWith([]Message{m}, OpenAIOptions{KeepExtra: c.keep})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := marshal(out)
		if string(data) != c.want {
			t.Errorf("keep=%v: got %s, want %s", c.keep, data, c.want)
		}
	}
}
