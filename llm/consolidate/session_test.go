package consolidate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/llmtest"
)

func TestSessionRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s", "cli_ana.jsonl")
	s := &consolidate.Session{Key: "cli_ana", CreatedAt: t0, LastConsolidated: 2, Messages: history(2)}
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) != 5 || lines[0] != `{"_type":"metadata","key":"cli_ana","created_at":"2026-03-01T10:15:00Z","last_consolidated":2}` ||
		lines[1] != `{"role":"user","content":"Question number 0 about the quarterly churn report.","timestamp":"2026-03-01T10:15:00Z"}` {
		t.Errorf("file:\n%s", b)
	}
	got, err := consolidate.ReadSession(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastConsolidated != 2 || len(got.Messages) != 4 || got.Messages[3].Content.String() != s.Messages[3].Content.String() || !got.Messages[3].Time.Equal(s.Messages[3].Time) {
		t.Errorf("read back %+v", got)
	}
}

func TestReadSessionErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ text, want string }{
		"json": {"{\"role\":\"user\",\"content\":\"a\"}\n{oops\n", "bad.jsonl:2: "},
		"role": {"{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"system\",\"content\":\"b\"}\n", `bad.jsonl:3: role "system"`},
		"ptr":  {"{\"_type\":\"metadata\",\"last_consolidated\":5}\n{\"role\":\"user\",\"content\":\"a\"}\n", "last_consolidated 5 is outside 0..1"},
	} {
		path := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(path, []byte(tc.text), 0o644)
		_, err := consolidate.ReadSession(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	if s, err := consolidate.ReadSession(filepath.Join(dir, "missing.jsonl")); err != nil || len(s.Messages) != 0 {
		t.Errorf("missing file: %v", err)
	}
}

func TestRunSavesPointer(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(save("[2026-03-01 10:15] E.", "M"))
	files, dir := workspaceFiles(t, "")
	hist := filepath.Join(dir, "h.jsonl")
	// A plain JSONL history without metadata.
	var b strings.Builder
	for _, m := range history(6) {
		b.WriteString(`{"role":"` + string(m.Role) + `","content":"` + m.Content.String() + `"}` + "\n")
	}
	os.WriteFile(hist, []byte(b.String()), 0o644)
	c, _ := llm.New(s.Config(), llmtest.Options(nil)...)
	rep, err := consolidate.Run(context.Background(), consolidate.RunOptions{
		Options: consolidate.Options{Client: c, Files: files, Counter: llmtest.Counter{}, Threshold: 200, Keep: 100},
		History: hist,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.PointerFrom != 0 || rep.PointerTo == 0 || !rep.SessionSaved || len(rep.Outcomes) != 1 {
		t.Errorf("report = %+v", rep)
	}
	sess, _ := consolidate.ReadSession(hist)
	if sess.LastConsolidated != rep.PointerTo || len(sess.Messages) != 12 {
		t.Errorf("pointer %d, %d messages", sess.LastConsolidated, len(sess.Messages))
	}
	// Again: below the threshold now, nothing to do, no request.
	rep, err = consolidate.Run(context.Background(), consolidate.RunOptions{
		Options: consolidate.Options{Client: c, Files: files, Counter: llmtest.Counter{}, Threshold: 200, Keep: 100},
		History: hist,
	})
	if err != nil || rep.SessionSaved || len(s.Requests()) != 1 {
		t.Errorf("second run: %+v %v, %d requests", rep, err, len(s.Requests()))
	}
}
