package messages

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/internal/fittest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/tokens"
)

// TestMessagesContextWindow: some 40k tokens of history with tool rounds
// and an 8,000-token window with 500 for the reply come out at most 7,500
// tokens, counted from the printed request; the newest turns whole and in
// order, a note at the cut, no orphaned tool call or result.
func TestMessagesContextWindow(t *testing.T) {
	dir := t.TempDir()
	hist := fittest.Conversation(110, 300)
	f, err := os.Create(filepath.Join(dir, "long.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := messages.WriteJSONL(f, hist); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, _ := tokens.Get(tokens.O200kBase)
	args := []string{"--message", "What did we find?", "--history", f.Name(), "--now", "2026-03-01T10:15:00Z"}

	out, errOut, err := run(t, system, append(args, "--context-window", "8000", "--reserve-output", "500")...)
	if err != nil {
		t.Fatal(err)
	}
	var got []fittest.WireMessage
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	n := fittest.Tokens(c.Count, got)
	full, _, err := run(t, system, args...)
	if err != nil {
		t.Fatal(err)
	}
	var all []fittest.WireMessage
	json.Unmarshal([]byte(full), &all)
	t.Logf("%d tokens unfitted, %d fitted; stderr: %s", fittest.Tokens(c.Count, all), n, errOut)
	if fittest.Tokens(c.Count, all) < 35000 {
		t.Fatalf("the history is %d tokens; the test wants some 40k", fittest.Tokens(c.Count, all))
	}
	if n > 7500 {
		t.Errorf("fitted request is %d tokens, over 7,500", n)
	}
	dropped := len(all) - len(got) + 1 // the note stands for them
	note := got[1].Text()
	if got[1].Role != "user" || !strings.HasPrefix(note, fmt.Sprintf("[loom: %d earlier messages", dropped)) {
		t.Errorf("no note for %d messages after the system message: %q", dropped, note)
	}
	// After the note: the unfitted list's tail, byte for byte.
	for i := 2; i < len(got); i++ {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(all[len(all)-len(got)+i])
		if string(a) != string(b) {
			t.Fatalf("message %d is not the original's message %d", i, len(all)-len(got)+i)
		}
	}
	if got[2].Role != "user" {
		t.Errorf("the kept history starts with %s, not a whole turn", got[2].Role)
	}
	for _, o := range fittest.Orphans(got) {
		t.Error(o)
	}
	if !strings.Contains(errOut, fmt.Sprintf("loom: fit: left out the %d oldest history messages", dropped)) {
		t.Errorf("stderr does not say what went: %s", errOut)
	}

	// The json format reports it, and its prefix is the fitted one.
	js, _, err := run(t, system, append(args, "--context-window", "8000", "--reserve-output", "500", "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Prefix struct{ Messages int } `json:"prefix"`
		Fit    struct {
			Dropped int `json:"history_dropped"`
			Tokens  int `json:"tokens"`
		} `json:"fit"`
	}
	json.Unmarshal([]byte(js), &doc)
	if doc.Fit.Dropped != dropped || doc.Fit.Tokens != n || doc.Prefix.Messages != len(got)-2 {
		t.Errorf("json report: %+v, want %d dropped, %d tokens, a prefix of %d messages", doc, dropped, n, len(got)-2)
	}

	// A request that fits passes unchanged.
	small := filepath.Join(dir, "short.jsonl")
	sf, _ := os.Create(small)
	messages.WriteJSONL(sf, hist[:8])
	sf.Close()
	args[3] = small
	a, _, err1 := run(t, system, args...)
	b, errB, err2 := run(t, system, append(args, "--context-window", "8000", "--reserve-output", "500")...)
	if err1 != nil || err2 != nil || a != b || strings.Contains(errB, "loom: fit:") {
		t.Errorf("a request that fits changed: %v %v %s", err1, err2, errB)
	}
}

func TestMessagesContextWindowFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--message", "x", "--context-window", "-1"}, "--context-window and --reserve-output must be positive numbers of tokens"},
		{[]string{"--message", "x", "--context-window", "500", "--reserve-output", "500"}, "--reserve-output 500 leaves no room in a --context-window of 500"},
	} {
		_, _, err := run(t, system, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: got %v, want %s", tc.args, err, tc.want)
		}
	}
}

// TestMessagesContextWindowFromWorkspace: loom.yaml's llm.context_window
// applies without the flag, and a session file whose start was
// consolidated gets the latest HISTORY.md entries in its note.
func TestMessagesContextWindowFromWorkspace(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, ws, "loom.yaml", "llm:\n  model: gpt-4o\n  context_window: 8000\n  reserve_output: 500\n")
	os.Mkdir(filepath.Join(ws, "memory"), 0o700)
	writeFile(t, ws, "memory/HISTORY.md", "[2026-02-01 09:00] Old talk about harbors.\n\n[2026-02-02 09:00] Searched the ledger for amber; found three entries.\n\n")
	var b strings.Builder
	b.WriteString(`{"_type":"metadata","key":"s1","last_consolidated":12}` + "\n")
	if err := messages.WriteJSONL(&b, fittest.Conversation(110, 300)); err != nil {
		t.Fatal(err)
	}
	sess := writeFile(t, t.TempDir(), "s1.jsonl", b.String())
	ios, _, out, errOut := cmdutil.Test()
	cmd := NewCmdMessages(ios, nil)
	cmd.SetArgs([]string{"-w", ws, "--message", "go on", "--history", sess, "--now", "2026-03-01T10:15:00Z"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var got []fittest.WireMessage
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	c, _ := tokens.Get(tokens.O200kBase)
	if n := fittest.Tokens(c.Count, got); n > 7500 {
		t.Errorf("%d tokens", n)
	}
	note := got[1].Text()
	if !strings.Contains(note, "[2026-02-02 09:00] Searched the ledger for amber; found three entries.") || !strings.Contains(note, "Old talk about harbors") {
		t.Errorf("the note lacks the HISTORY.md entries:\n%s", note)
	}
	if !strings.Contains(errOut.String(), "loom: fit: left out") {
		t.Errorf("stderr: %s", errOut)
	}
}
