package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
)

// A nanobot session file, as nanobot writes it: metadata first, naive
// local times, keys loom does not know.
const nanobotFile = `{"_type": "metadata", "key": "telegram:42", "created_at": "2026-03-01T10:00:00.123456", "updated_at": "2026-03-01T10:05:00.000001", "metadata": {"lang": "fr"}, "last_consolidated": 0}
{"role": "user", "content": "bonjour", "timestamp": "2026-03-01T10:00:01.5"}
{"role": "assistant", "content": "salut", "timestamp": "2026-03-01T10:00:02", "tools_used": ["x"]}
`

var ctx = context.Background()

func TestFileStoreKeepsNanobotFiles(t *testing.T) {
	dir := t.TempDir()
	store := session.NewFileStore(dir, session.FileOptions{Now: func() time.Time { return time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC) }})
	path := store.Path("telegram:42")
	if filepath.Base(path) != "telegram_42.jsonl" {
		t.Fatalf("file name %s, want nanobot's telegram_42.jsonl", filepath.Base(path))
	}
	os.WriteFile(path, []byte(nanobotFile), 0o600)
	st, err := store.Load(ctx, "telegram:42")
	if err != nil {
		t.Fatal(err)
	}
	if st.Key != "telegram:42" || len(st.Messages) != 2 || !st.Messages[0].Time.Equal(time.Date(2026, 3, 1, 10, 0, 1, 5e8, time.UTC)) {
		t.Fatalf("loaded %+v", st)
	}
	reply := messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent("ça va ?")}
	user := messages.Message{Role: messages.RoleUser, Content: messages.TextContent("oui")}
	if err := store.Append(ctx, "telegram:42", user, reply); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), nanobotFile) {
		t.Errorf("an append changed what was there:\n%s", data)
	}
	// Moving the pointer rewrites the metadata line only; message lines
	// stay byte for byte, nanobot's keys and spacing included.
	if err := store.MoveConsolidated(ctx, "telegram:42", 0, 2); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(path)
	first, rest, _ := strings.Cut(string(data), "\n")
	_, nanoRest, _ := strings.Cut(nanobotFile, "\n")
	if !strings.HasPrefix(rest, nanoRest) {
		t.Errorf("message lines changed:\n%s", rest)
	}
	want := `{"_type":"metadata","key":"telegram:42","created_at":"2026-03-01T10:00:00.123456","updated_at":"2026-03-02T08:00:00.000000","metadata":{"lang":"fr"},"last_consolidated":2}`
	if first != want {
		t.Errorf("metadata line\n%s\nwant\n%s", first, want)
	}
	// The pointer moves only from where the caller saw it.
	if err := store.MoveConsolidated(ctx, "telegram:42", 0, 4); !errors.Is(err, session.ErrPointerMoved) {
		t.Errorf("stale move: got %v", err)
	}
	// Trim keeps what came after the archived messages.
	if err := store.Trim(ctx, "telegram:42", 3); err != nil {
		t.Fatal(err)
	}
	st, _ = store.Load(ctx, "telegram:42")
	if len(st.Messages) != 1 || st.Messages[0].Content.Text != "ça va ?" || st.LastConsolidated != 0 || string(st.Meta["metadata"]) != `{"lang":"fr"}` {
		t.Errorf("after trim %+v", st)
	}
}

func TestFileStoreTornLineAndSymlink(t *testing.T) {
	dir := t.TempDir()
	store := session.NewFileStore(dir, session.FileOptions{})
	// A line cut by a crash of a writer without loom's lock: the next
	// append starts on its own line. The torn line then names itself.
	os.WriteFile(store.Path("k"), []byte(`{"role":"user","content":"a"}`+"\n"+`{"role":"assis`), 0o600)
	if err := store.Append(ctx, "k", messages.Message{Role: messages.RoleUser, Content: messages.TextContent("b")}); err != nil {
		t.Fatal(err)
	}
	_, err := store.Load(ctx, "k")
	var he *messages.HistoryError
	if !errors.As(err, &he) || he.Line != 2 {
		t.Errorf("torn line: got %v, want an error at line 2", err)
	}
	// A symlink in place of a session file is not followed.
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	if err := os.Symlink(victim, store.Path("evil")); err != nil {
		t.Skip(err)
	}
	if err := store.Append(ctx, "evil", messages.Message{Role: messages.RoleUser, Content: messages.TextContent("x")}); err == nil {
		t.Error("append followed a symlink")
	}
	if _, err := store.Load(ctx, "evil"); err == nil {
		t.Error("load followed a symlink")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim changed: %q", b)
	}
}

func TestFileNames(t *testing.T) {
	for key, want := range map[string]string{
		"cli_ana": "cli_ana.jsonl", "slack:U1/x y": "slack_U1_x_y.jsonl", "..": "__.jsonl", "../../etc/passwd": ".._.._etc_passwd.jsonl",
	} {
		if got := session.FileName(key); got != want {
			t.Errorf("FileName(%q) = %q, want %q", key, got, want)
		}
		if strings.Contains(session.FileName(key), "/") {
			t.Errorf("FileName(%q) has a slash", key)
		}
	}
}

// The consolidation report is `loom memory consolidate`'s output (and an
// HTTP body later): snake_case, and it round-trips.
func TestReportRoundTrips(t *testing.T) {
	rep := session.Report{Messages: 8, Tokens: 500, Threshold: 400, PointerFrom: 0, PointerTo: 6, SessionSaved: true,
		Outcomes: []consolidate.Outcome{{From: 0, To: 6, Archived: true, Refused: "memory_update holds control character U+0000 at byte 3; it is not text",
			Attempts: 1, Forced: true, HistoryEntry: "[2026-03-01 10:00] <raw> & more", Failures: []string{"x"}}}}
	data, err := jsonout.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := jsonout.RoundTrip[session.Report](data); err != nil {
		t.Error(err)
	}
	for _, key := range []string{`"pointer_to": 6`, `"history_entry": "[2026-03-01 10:00] <raw> & more"`, `"memory_changed": false`, `"input_tokens": 0`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("report lacks %s:\n%s", key, data)
		}
	}
}

// The pointer read alone (the metadata record only) agrees with a full
// Load: a missing file, nanobot's file, after a move, a plain history
// with no record, and a record too long to read alone.
func TestFileStorePointerAgreesWithLoad(t *testing.T) {
	dir := t.TempDir()
	store := session.NewFileStore(dir, session.FileOptions{})
	check := func(key string, want int) {
		t.Helper()
		n, err := store.Pointer(ctx, key)
		st, lerr := store.Load(ctx, key)
		if err != nil || lerr != nil || n != want || st.LastConsolidated != want {
			t.Errorf("%s: Pointer %d (%v), Load %d (%v), want %d", key, n, err, st.LastConsolidated, lerr, want)
		}
	}
	check("none", 0)
	os.WriteFile(store.Path("nano"), []byte(nanobotFile), 0o600)
	check("nano", 0)
	if err := store.MoveConsolidated(ctx, "nano", 0, 2); err != nil {
		t.Fatal(err)
	}
	check("nano", 2)
	os.WriteFile(store.Path("plain"), []byte(`{"role":"user","content":"hi"}`+"\n"), 0o600)
	check("plain", 0)
	long := `{"_type":"metadata","key":"long","metadata":{"note":"` + strings.Repeat("x", 70<<10) + `"},"last_consolidated":1}` + "\n" +
		`{"role":"user","content":"a"}` + "\n" + `{"role":"assistant","content":"b"}` + "\n"
	os.WriteFile(store.Path("long"), []byte(long), 0o600)
	check("long", 1)
}
