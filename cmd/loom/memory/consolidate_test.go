package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/workspace"
)

func TestConsolidateCommand(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "memory"), 0o755)
	os.WriteFile(filepath.Join(dir, "memory/MEMORY.md"), []byte("# Memory\n- User name: Ana\n"), 0o644)
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"role":"user","content":"Message %d: I like tea and long walks by the river in the evening."}`, i),
			fmt.Sprintf(`{"role":"assistant","content":"Reply %d: noted, that sounds lovely."}`, i))
	}
	history := filepath.Join(dir, "h.jsonl")
	os.WriteFile(history, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte("llm:\n  consolidation:\n    threshold_tokens: 400\n"), 0o644)

	s := llmtest.New(t, llmtest.OpenAI)
	args, _ := json.Marshal(map[string]string{"history_entry": "[2026-03-01 10:15] Ana said she likes tea.", "memory_update": "# Memory\n- User name: Ana\n- Likes tea\n"})
	s.Push(llmtest.Reply{ToolCalls: []messages.ToolCall{messages.NewToolCall("", "save_memory", string(args))}})
	client, err := llm.New(s.Config(), llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	io, _, out, _ := cmdutil.Test()
	if err := consolidateRun(context.Background(), &ConsolidateOptions{IO: io, Dir: dir, History: history, Client: client}); err != nil {
		t.Fatal(err)
	}
	mem, _ := os.ReadFile(filepath.Join(dir, "memory/MEMORY.md"))
	hist, _ := os.ReadFile(filepath.Join(dir, "memory/HISTORY.md"))
	if string(mem) != "# Memory\n- User name: Ana\n- Likes tea\n" || !strings.Contains(string(hist), "Ana said she likes tea.") {
		t.Errorf("MEMORY.md %q, HISTORY.md %q", mem, hist)
	}
	var rep struct {
		PointerTo    int  `json:"pointer_to"`
		SessionSaved bool `json:"session_saved"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.PointerTo == 0 || !rep.SessionSaved {
		t.Errorf("report %s (%v)", out, err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "save_memory") {
		t.Errorf("requests %d", len(reqs))
	}
}

func consolidateFixture(t *testing.T) (dir, history string) {
	t.Helper()
	dir = t.TempDir()
	os.MkdirAll(filepath.Join(dir, "memory"), 0o700)
	os.WriteFile(filepath.Join(dir, "memory/MEMORY.md"), []byte("# Memory\n- User name: Ana\n"), 0o600)
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"role":"user","content":"Message %d: I like tea and long walks by the river in the evening."}`, i),
			fmt.Sprintf(`{"role":"assistant","content":"Reply %d: noted, that sounds lovely."}`, i))
	}
	history = filepath.Join(dir, "h.jsonl")
	os.WriteFile(history, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte("llm:\n  consolidation:\n    threshold_tokens: 400\n"), 0o644)
	return dir, history
}

// A model whose reply cannot be used fails the command (exit 1) with
// words that say what happened; MEMORY.md stays and nothing is lost.
func TestConsolidateFailsClearly(t *testing.T) {
	dir, history := consolidateFixture(t)
	s := llmtest.New(t, llmtest.OpenAI)
	args, _ := json.Marshal(map[string]string{"history_entry": "[2026-03-01 10:15] E.", "memory_update": "# Memory\x00\n"})
	s.Push(llmtest.Reply{ToolCalls: []messages.ToolCall{messages.NewToolCall("", "save_memory", string(args))}})
	client, err := llm.New(s.Config(), llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	io, _, out, _ := cmdutil.Test()
	err = consolidateRun(context.Background(), &ConsolidateOptions{IO: io, Dir: dir, History: history, Client: client})
	if err == nil || !strings.Contains(err.Error(), "consolidation failed: the model's reply could not be used") ||
		!strings.Contains(err.Error(), "control character U+0000") || !strings.Contains(err.Error(), "kept raw in memory/HISTORY.md") {
		t.Fatalf("err = %v", err)
	}
	if mem, _ := os.ReadFile(filepath.Join(dir, "memory/MEMORY.md")); string(mem) != "# Memory\n- User name: Ana\n" {
		t.Errorf("MEMORY.md changed: %q", mem)
	}
	var rep struct {
		Outcomes []struct {
			Archived bool   `json:"archived"`
			Refused  string `json:"refused"`
		} `json:"outcomes"`
	}
	if json.Unmarshal(out.Bytes(), &rep) != nil || len(rep.Outcomes) != 1 || !rep.Outcomes[0].Archived {
		t.Errorf("report %s", out)
	}
}

// A second consolidation waits for the first, then fails naming the lock
// and its holder.
func TestConsolidateWaitsForTheLock(t *testing.T) {
	dir, history := consolidateFixture(t)
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := consolidate.WorkspaceFiles{WS: ws}.Lock(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	s := llmtest.New(t, llmtest.OpenAI)
	client, _ := llm.New(s.Config(), llmtest.Options(nil)...)
	io, _, _, _ := cmdutil.Test()
	err = consolidateRun(context.Background(), &ConsolidateOptions{IO: io, Dir: dir, History: history, Client: client, Wait: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "memory.lock is still locked by pid ") || !strings.Contains(err.Error(), "consolidation failed") {
		t.Fatalf("err = %v", err)
	}
	if len(s.Requests()) != 0 {
		t.Error("the model was called without the lock")
	}
}

// A dry run must read differently from a real one (issue 12 item 11): the
// report says dry_run, stderr says nothing was written, and nothing is.
func TestConsolidateDryRunSaysSo(t *testing.T) {
	dir, history := consolidateFixture(t)
	before, _ := os.ReadFile(history)
	io, _, out, errOut := cmdutil.Test()
	if err := consolidateRun(context.Background(), &ConsolidateOptions{IO: io, Dir: dir, History: history, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		DryRun bool `json:"dry_run"`
	}
	if json.Unmarshal(out.Bytes(), &rep) != nil || !rep.DryRun {
		t.Errorf("report lacks dry_run: %s", out)
	}
	if !strings.HasPrefix(errOut.String(), "dry run: ") || !strings.Contains(errOut.String(), "nothing was written") {
		t.Errorf("stderr = %q", errOut)
	}
	if after, _ := os.ReadFile(history); string(after) != string(before) {
		t.Error("dry run changed the history file")
	}
	if _, err := os.Stat(filepath.Join(dir, "memory/HISTORY.md")); err == nil {
		t.Error("dry run wrote HISTORY.md")
	}
}

// A --history file that is not there is an error naming it, and nothing is
// written: no lock file beside the name, nothing in the workspace.
func TestConsolidateMissingHistory(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nope.jsonl")
	io, _, out, _ := cmdutil.Test()
	err := consolidateRun(context.Background(), &ConsolidateOptions{IO: io, Dir: dir, History: missing, DryRun: true})
	if err == nil || err.Error() != "--history "+missing+": no such file" || out.Len() != 0 {
		t.Fatalf("err = %v, out %q", err, out)
	}
	for _, d := range []string{dir, filepath.Dir(missing)} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Errorf("%s: written to: %v", d, entries)
		}
	}
}
