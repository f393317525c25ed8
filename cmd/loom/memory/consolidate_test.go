package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
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
