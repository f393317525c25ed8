package messages

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A nanobot session file: metadata first, naive local timestamps, keys loom
// does not know.
const nanobotSession = `{"_type": "metadata", "key": "telegram:42", "created_at": "2026-03-01T10:00:00.123456", "updated_at": "2026-03-01T10:05:00.000001", "metadata": {"lang": "fr"}, "last_consolidated": 1}
{"role": "user", "content": "bonjour", "timestamp": "2026-03-01T10:00:01.5"}
{"role": "assistant", "content": "salut", "timestamp": "2026-03-01T10:00:02", "tools_used": ["x"]}
`

func TestReadSessionNanobot(t *testing.T) {
	h, err := ReadSession(strings.NewReader(nanobotSession), "s.jsonl", HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta == nil || h.Meta.Key != "telegram:42" || h.Meta.LastConsolidated != 1 {
		t.Fatalf("meta = %+v", h.Meta)
	}
	if want := time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC); !h.Meta.CreatedAt.Equal(want) {
		t.Errorf("created_at = %v, want %v (naive is UTC)", h.Meta.CreatedAt, want)
	}
	if string(h.Meta.Extra["metadata"]) != `{"lang": "fr"}` {
		t.Errorf("metadata object lost: %q", h.Meta.Extra["metadata"])
	}
	if len(h.Messages) != 2 {
		t.Fatalf("got %d messages", len(h.Messages))
	}
	if want := time.Date(2026, 3, 1, 10, 0, 1, 5e8, time.UTC); !h.Messages[0].Time.Equal(want) {
		t.Errorf("timestamp = %v, want %v", h.Messages[0].Time, want)
	}
	if string(h.Messages[1].Extra()["tools_used"]) != `["x"]` {
		t.Errorf("unknown key lost: %+v", h.Messages[1].Extra())
	}
	// Written back and read again, nothing changes.
	out := AppendMeta(nil, *h.Meta)
	for _, m := range h.Messages {
		out, _ = AppendJSONL(out, m)
	}
	h2, err := ReadSession(bytes.NewReader(out), "again", HistoryOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if h2.Meta.Key != h.Meta.Key || !h2.Meta.CreatedAt.Equal(h.Meta.CreatedAt) || h2.Meta.LastConsolidated != 1 ||
		string(h2.Meta.Extra["metadata"]) != `{"lang":"fr"}` {
		t.Errorf("meta round trip: %+v", h2.Meta)
	}
	if !h2.Messages[0].Time.Equal(h.Messages[0].Time) || string(h2.Messages[1].Extra()["tools_used"]) != `["x"]` {
		t.Errorf("messages round trip: %+v", h2.Messages)
	}
	if !strings.HasPrefix(string(out), `{"_type":"metadata","key":"telegram:42","created_at":"2026-03-01T10:00:00.123456",`) {
		t.Errorf("metadata line not in nanobot's form: %s", out)
	}
	// The plain reader leaves the record out.
	msgs, err := ReadHistory(strings.NewReader(nanobotSession), "s.jsonl", HistoryOptions{})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("ReadHistory: %d, %v", len(msgs), err)
	}
}

func TestReadSessionMetadataOnlyFirst(t *testing.T) {
	in := `{"role":"user","content":"a"}` + "\n" + `{"_type":"metadata","last_consolidated":0}` + "\n"
	_, err := ReadSession(strings.NewReader(in), "s.jsonl", HistoryOptions{})
	var he *HistoryError
	if !errors.As(err, &he) || he.Line != 2 {
		t.Fatalf("got %v, want an error at line 2", err)
	}
}

func TestReadHistoryFileRefusesFolder(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadHistoryFile(dir, HistoryOptions{})
	if !errors.Is(err, ErrNotAFile) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "folder") {
		t.Fatalf("got %v, want a folder error naming %s", err, dir)
	}
}

func TestReadHistoryCapsBytes(t *testing.T) {
	line := `{"role":"user","content":"` + strings.Repeat("x", 100) + `"}` + "\n"
	jsonl := strings.Repeat(line, 100)
	array := "[" + strings.TrimSuffix(strings.ReplaceAll(jsonl, "}\n", "},\n"), ",\n") + "]"
	for name, in := range map[string]string{"jsonl": jsonl, "array": array} {
		if _, err := ReadHistory(strings.NewReader(in), name, HistoryOptions{MaxHistoryBytes: int64(len(in))}); err != nil {
			t.Errorf("%s at the cap: %v", name, err)
		}
		_, err := ReadHistory(strings.NewReader(in), name, HistoryOptions{MaxHistoryBytes: int64(len(in)) - 1})
		if !errors.Is(err, ErrHistoryTooLarge) {
			t.Errorf("%s over the cap: got %v", name, err)
		}
	}
	// A file says its size before a byte is read.
	p := filepath.Join(t.TempDir(), "h.jsonl")
	os.WriteFile(p, []byte(jsonl), 0o600)
	if _, err := ReadHistoryFile(p, HistoryOptions{MaxHistoryBytes: 100}); !errors.Is(err, ErrHistoryTooLarge) {
		t.Errorf("file over the cap: got %v", err)
	}
}

func TestReadHistoryArrayStreamsLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n")
	for i := 0; i < 2000; i++ {
		b.WriteString(`  {"role":"user","content":"` + strings.Repeat("y", 50) + `"},` + "\n")
	}
	b.WriteString(`  {"role":"bot","content":"z"}` + "\n]\n")
	_, err := ReadHistory(strings.NewReader(b.String()), "big.json", HistoryOptions{})
	var he *HistoryError
	if !errors.As(err, &he) || he.Line != 2002 {
		t.Fatalf("got %v, want line 2002", err)
	}
	_, err = ReadHistory(strings.NewReader(`[{"role":"user","content":"a"}] x`), "t.json", HistoryOptions{})
	if err == nil {
		t.Fatal("data after ] was accepted")
	}
}

func TestReadSessionMeta(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     int // -1: no record
		err      bool
	}{
		{"empty", "", -1, false},
		{"plain history", `{"role":"user","content":"a"}` + "\n", -1, false},
		{"record", "\ufeff\n" + `{"_type":"metadata","last_consolidated":3}` + "\n" + `{"role":"user","content":"a"}`, 3, false},
		{"record, no newline", `{"_type":"metadata","last_consolidated":2}`, 2, false},
		{"record too long", `{"_type":"metadata","x":"` + strings.Repeat("x", 70<<10) + `"}`, -1, true},
		{"negative", `{"_type":"metadata","last_consolidated":-1}`, -1, true},
	} {
		m, err := ReadSessionMeta(strings.NewReader(c.in))
		got := -1
		if m != nil {
			got = m.LastConsolidated
		}
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: %d, %v; want %d, error %v", c.name, got, err, c.want, c.err)
		}
	}
}
