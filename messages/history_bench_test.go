package messages

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// historyArray is a JSON-array history of n messages of about 1 KB each.
func historyArray(n int) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b.WriteString(`  {"role":"` + role + `","content":"` + strings.Repeat("y", 1000) + `","timestamp":"2026-03-01T10:00:00"}`)
	}
	b.WriteString("\n]\n")
	return b.Bytes()
}

// BenchmarkReadHistoryArray reads a 4 MB JSON array with the streaming
// reader.
func BenchmarkReadHistoryArray(b *testing.B) {
	data := historyArray(4000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadHistory(bytes.NewReader(data), "h.json", HistoryOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadHistoryArrayWhole is the floor it replaced: the whole input
// held, decoded to raw elements, then each element parsed.
func BenchmarkReadHistoryArrayWhole(b *testing.B) {
	data := historyArray(4000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		held := append([]byte(nil), data...) // io.ReadAll's copy
		var raws []json.RawMessage
		if err := json.Unmarshal(held, &raws); err != nil {
			b.Fatal(err)
		}
		out := make([]Message, 0, len(raws))
		for _, r := range raws {
			m, err := parseHistoryMessage(r)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, m)
		}
		if len(out) != len(raws) {
			b.Fatalf("%d messages of %d", len(out), len(raws))
		}
	}
}
