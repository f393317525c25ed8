package messages

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestReadHistoryJSONL(t *testing.T) {
	in := "\ufeff" + `{"role":"user","content":"hi","timestamp":"2026-03-01T10:00:00"}` + "\r\n\n" +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}}],"reasoning_content":"think"}` + "\n" +
		`{"role":"tool","tool_call_id":"c1","name":"read","content":[{"type":"text","text":"ok"}]}` + "\n" +
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"text","text":"see"}]}`
	msgs, err := ReadHistory(strings.NewReader(in), "h.jsonl", HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 {
		t.Fatalf("got %d messages, want 4", len(msgs))
	}
	if msgs[0].Content.Text != "hi" || msgs[1].Reasoning() != "think" || msgs[1].ToolCalls[0].Function.Arguments != `{"p":1}` {
		t.Errorf("fields lost: %+v %+v", msgs[0], msgs[1])
	}
	if p := msgs[3].Content.Parts[0]; p.Type != PartImage || p.Image.MIME != "image/png" || p.Image.Data != "AAAA" {
		t.Errorf("image part = %+v", p)
	}
	var out bytes.Buffer
	if err := WriteJSONL(&out, msgs); err != nil {
		t.Fatal(err)
	}
	want := `{"role":"user","content":"hi","timestamp":"2026-03-01T10:00:00"}` + "\n" +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}}],"reasoning_content":"think"}` + "\n" +
		`{"role":"tool","content":[{"type":"text","text":"ok"}],"tool_call_id":"c1","name":"read"}` + "\n" +
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"text","text":"see"}]}` + "\n"
	if out.String() != want {
		t.Errorf("JSONL:\n%s\nwant\n%s", out.String(), want)
	}
}

func TestReadHistoryArray(t *testing.T) {
	in := "[\n  {\"role\": \"user\", \"content\": \"a\"},\n  {\"role\": \"assistant\", \"content\": \"b\"}\n]\n"
	msgs, err := ReadHistory(strings.NewReader(in), "h.json", HistoryOptions{})
	if err != nil || len(msgs) != 2 || msgs[1].Content.Text != "b" {
		t.Fatalf("got %+v, %v", msgs, err)
	}
	_, err = ReadHistory(strings.NewReader("[\n {\"role\":\"user\",\"content\":\"a\"},\n {\"role\":\"robot\",\"content\":\"b\"}\n]"), "h.json", HistoryOptions{})
	if err == nil || err.Error() != `h.json:3: message 1: unknown role "robot" (want user, assistant or tool)` {
		t.Errorf("got %v", err)
	}
	_, err = ReadHistory(strings.NewReader("[\n {\"role\":\"user\",\n \"content\": }\n]"), "h.json", HistoryOptions{})
	var he *HistoryError
	if !errors.As(err, &he) || he.Line != 3 {
		t.Errorf("syntax error: got %v, want line 3", err)
	}
}

func TestReadHistoryErrorsNameTheLine(t *testing.T) {
	ok := `{"role":"user","content":"hi"}` + "\n"
	for _, tc := range []struct{ in, want string }{
		{ok + "{not json\n", "h.jsonl:2: invalid character 'n' looking for beginning of object key string"},
		{ok + ok + `{"role":"bot","content":"x"}`, `h.jsonl:3: unknown role "bot" (want user, assistant or tool)`},
		{`{"role":"system","content":"x"}`, `h.jsonl:1: role "system" cannot appear in history: loom builds the system prompt itself`},
		{`{"content":"x"}`, "h.jsonl:1: message has no role"},
		{`{"role":"tool","content":"x"}`, "h.jsonl:1: tool message has no tool_call_id"},
		{`{"role":"user","content":42}`, "h.jsonl:1: content: want a string, null or a list of parts"},
		{`{"role":"user","content":[{"type":"input_audio"}]}`, `h.jsonl:1: content part 0: unsupported part type "input_audio" (want text or image_url)`},
		{`"just a string"`, "h.jsonl:1: want a JSON object"},
		{`["role","user"]`, "h.jsonl:1: message 0: want a JSON object"},
		{`{"role":"user","tool_calls":[{"id":"1","function":{"name":"x"}}]}`, "h.jsonl:1: user message has tool_calls; only assistant messages may"},
	} {
		_, err := ReadHistory(strings.NewReader(tc.in), "h.jsonl", HistoryOptions{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

func TestReadHistoryLongLine(t *testing.T) {
	long := `{"role":"user","content":"` + strings.Repeat("x", 10<<20) + `"}`
	in := `{"role":"user","content":"hi"}` + "\n" + long + "\n"
	_, err := ReadHistory(strings.NewReader(in), "h.jsonl", HistoryOptions{})
	var he *HistoryError
	if !errors.Is(err, ErrLineTooLong) || !errors.As(err, &he) || he.Line != 2 {
		t.Fatalf("got %v, want a too-long error on line 2", err)
	}
	if got, want := err.Error(), "h.jsonl:2: line too long: over 8388608 bytes"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A raised cap reads the same line.
	msgs, err := ReadHistory(strings.NewReader(in), "h.jsonl", HistoryOptions{MaxLineBytes: 11 << 20})
	if err != nil || len(msgs) != 2 {
		t.Errorf("raised cap: %d messages, %v", len(msgs), err)
	}
}

func TestReadHistoryEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n  \n", "[]"} {
		msgs, err := ReadHistory(strings.NewReader(in), "h", HistoryOptions{})
		if err != nil || len(msgs) != 0 {
			t.Errorf("%q: %v, %v", in, msgs, err)
		}
	}
}

func FuzzReadHistory(f *testing.F) {
	f.Add(`{"role":"user","content":"hi"}` + "\n" + `{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}`)
	f.Add(`[{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"x"}]}]`)
	f.Add(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}`)
	f.Add("\ufeff\n\n{}")
	f.Fuzz(func(t *testing.T, in string) {
		msgs, err := ReadHistory(strings.NewReader(in), "f", HistoryOptions{MaxLineBytes: 1 << 16})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		// What parses writes back, and reads back to the same bytes.
		var a, b bytes.Buffer
		if err := WriteJSONL(&a, msgs); err != nil {
			t.Fatal(err)
		}
		again, err := ReadHistory(bytes.NewReader(a.Bytes()), "f", HistoryOptions{MaxLineBytes: 1 << 20})
		if err != nil {
			t.Fatalf("re-read: %v\n%s", err, a.String())
		}
		WriteJSONL(&b, again)
		if a.String() != b.String() {
			t.Errorf("round trip differs:\n%s\n%s", a.String(), b.String())
		}
		// Cleaning never panics and is idempotent.
		c1, _ := Clean(msgs, CleanOptions{MaxToolChars: 40})
		c2, _ := Clean(c1, CleanOptions{MaxToolChars: 40})
		var x, y bytes.Buffer
		WriteJSONL(&x, c1)
		WriteJSONL(&y, c2)
		if x.String() != y.String() {
			t.Errorf("clean not idempotent:\n%s\n%s", x.String(), y.String())
		}
	})
}
