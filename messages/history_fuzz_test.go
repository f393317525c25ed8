package messages

import (
	"bytes"
	"testing"
)

// FuzzReadSession: no input makes the history reader panic, and what it
// reads it writes back in a form it reads again to the same messages.
func FuzzReadSession(f *testing.F) {
	f.Add([]byte(`{"_type":"metadata","key":"k","created_at":"2026-03-01T10:00:00","last_consolidated":1}
{"role":"user","content":"hi","timestamp":"2026-03-01T10:00:01","x":[1]}
{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}
{"role":"tool","tool_call_id":"c","content":"ok"}
`))
	f.Add([]byte(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}]`))
	f.Add([]byte("\ufeff\n\n[\n]"))
	f.Add([]byte(`{"_type":"metadata","last_consolidated":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadSession(bytes.NewReader(data), "f", HistoryOptions{MaxLineBytes: 1 << 16, MaxHistoryBytes: 1 << 20})
		if err != nil {
			return
		}
		var out []byte
		if h.Meta != nil {
			out = AppendMeta(out, *h.Meta)
		}
		for _, m := range h.Messages {
			if out, err = AppendJSONL(out, m); err != nil {
				return // a message loom reads but cannot write (an image part without an image) is not a round trip
			}
		}
		h2, err := ReadSession(bytes.NewReader(out), "again", HistoryOptions{})
		if err != nil {
			t.Fatalf("written back, not read again: %v\n%s", err, out)
		}
		if len(h2.Messages) != len(h.Messages) || (h.Meta == nil) != (h2.Meta == nil) {
			t.Fatalf("round trip: %d → %d messages\n%s", len(h.Messages), len(h2.Messages), out)
		}
		if h.Meta != nil && h2.Meta.LastConsolidated != h.Meta.LastConsolidated {
			t.Fatalf("pointer %d → %d", h.Meta.LastConsolidated, h2.Meta.LastConsolidated)
		}
	})
}
