package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/workspace"
)

// The process tests run this test binary again as a worker: turns on one
// session, or consolidations of it. Each worker is a real process, so the
// locks are tested as they are used, across processes.
const (
	envRole = "SESSION_TEST_ROLE"
	envDir  = "SESSION_TEST_DIR"
	envName = "SESSION_TEST_NAME"
	envN    = "SESSION_TEST_N"
	key     = "cli_shared"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "turns":
		os.Exit(runTurns())
	case "consolidate":
		os.Exit(runConsolidations())
	}
	os.Exit(m.Run())
}

func workerWorkspace() (*workspace.Workspace, string, int) {
	ws, err := workspace.Open(os.Getenv(envDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Getenv(envN))
	return ws, os.Getenv(envName), n
}

// runTurns takes n turns "NAME-i" on the shared session.
func runTurns() int {
	ws, name, n := workerWorkspace()
	s, err := session.Open(context.Background(), session.Options{
		Workspace: ws, Key: key, Client: &stubClient{reply: "ok"}, LockWait: time.Minute,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close(context.Background())
	for i := range n {
		text := fmt.Sprintf("%s-%d", name, i)
		if _, err := s.Turn(context.Background(), session.TurnInput{Text: text}); err != nil {
			fmt.Fprintln(os.Stderr, text, err)
			return 1
		}
		if os.Getenv("SESSION_TEST_PACE") != "" {
			time.Sleep(10 * time.Millisecond) // leave consolidators room to run
		}
	}
	return 0
}

// runConsolidations consolidates the shared session n times, each run
// adding one fact line to MEMORY.md, and prints the facts it added.
func runConsolidations() int {
	ws, name, n := workerWorkspace()
	client := &memoryClient{name: name}
	c := consolidate.New(consolidate.Options{
		Client: client, Files: consolidate.WorkspaceFiles{WS: ws}, Counter: llmtest.Counter{},
		Threshold: 16, Keep: 6, MaxRounds: 1,
	})
	store := session.NewFileStore(ws.Abs(session.Dir), session.FileOptions{LockWait: time.Minute})
	// Run until the parent says the chat is over (and at least n times).
	for i := 0; i < n || !exists(filepath.Join(os.Getenv(envDir), "chat-done")); i++ {
		if i > 2000 {
			break
		}
		_, err := session.Consolidate(context.Background(), store, key, c, consolidate.WorkspaceFiles{WS: ws},
			session.ConsolidateOptions{LockWait: time.Minute})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(2 * time.Millisecond)
	}
	for _, f := range client.added {
		fmt.Println(f)
	}
	return 0
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// memoryClient answers save_memory with the current memory plus one new
// fact line, as a model that keeps every fact would.
type memoryClient struct {
	name  string
	n     int
	added []string
}

func (c *memoryClient) Stream(ctx context.Context, req llm.Request, _ func(string)) (llm.Response, error) {
	return c.Complete(ctx, req)
}

func (c *memoryClient) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	text := req.Messages[0].Content.String()
	_, rest, _ := strings.Cut(text, "## Current memory file\n\n")
	current, _, _ := strings.Cut(rest, "\n\n## Conversation to record")
	if current == "(empty)" {
		current = ""
	}
	c.n++
	fact := fmt.Sprintf("- fact %s-%d", c.name, c.n)
	c.added = append(c.added, fact)
	args, _ := json.Marshal(map[string]string{
		"history_entry": "[2026-03-01 10:00] " + fact,
		"memory_update": strings.TrimSpace(current+"\n"+fact) + "\n",
	})
	return llm.Response{ToolCalls: []messages.ToolCall{messages.NewToolCall("c1", consolidate.ToolName, string(args))}}, nil
}

type worker struct {
	cmd *exec.Cmd
	out strings.Builder
	err strings.Builder
}

func startWorker(t *testing.T, role, dir, name string, n int) *worker {
	t.Helper()
	w := &worker{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	w.cmd.Env = append(os.Environ(), envRole+"="+role, envDir+"="+dir, envName+"="+name, envN+"="+strconv.Itoa(n))
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.err
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *worker) wait(t *testing.T) {
	t.Helper()
	if err := w.cmd.Wait(); err != nil {
		t.Errorf("worker %v: %v\n%s", w.cmd.Env[len(w.cmd.Env)-3:], err, w.err.String())
	}
}

// checkTurns says whether every turn of every process is in the session
// exactly once, each user message followed by its reply, and each
// process's turns in order.
func checkTurns(t *testing.T, msgs []messages.Message, procs, turns int) {
	t.Helper()
	seen := map[string]int{}
	next := map[string]int{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role != messages.RoleUser {
			t.Fatalf("message %d is %s %q, want a user message", i, m.Role, m.Content.Text)
		}
		if i+1 >= len(msgs) || msgs[i+1].Role != messages.RoleAssistant {
			t.Fatalf("message %d (%q) has no reply right after it", i, m.Content.Text)
		}
		i++
		name, num, _ := strings.Cut(m.Content.Text, "-")
		k, _ := strconv.Atoi(num)
		if seen[m.Content.Text]++; seen[m.Content.Text] > 1 {
			t.Errorf("turn %q saved twice", m.Content.Text)
		}
		if k != next[name] {
			t.Errorf("process %s: turn %d came where turn %d was due", name, k, next[name])
		}
		next[name] = k + 1
	}
	for p := range procs {
		if got := next[fmt.Sprint("p", p)]; got != turns {
			t.Errorf("process p%d: %d turns saved, want %d", p, got, turns)
		}
	}
}

func sharedWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "AGENTS.md", "# Agent\nBe brief.\n")
	return dir
}

func TestProcessesShareOneSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs, turns = 4, 12
	dir := sharedWorkspace(t)
	var ws []*worker
	for p := range procs {
		ws = append(ws, startWorker(t, "turns", dir, fmt.Sprint("p", p), turns))
	}
	for _, w := range ws {
		w.wait(t)
	}
	h, err := messages.ReadSessionFile(filepath.Join(dir, ".loom/sessions", session.FileName(key)), messages.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 2*procs*turns {
		t.Fatalf("%d messages, want %d", len(h.Messages), 2*procs*turns)
	}
	checkTurns(t, h.Messages, procs, turns)
}

func TestConsolidationBesideChatLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs, turns, consolidators, runs = 3, 20, 2, 6
	dir := sharedWorkspace(t)
	var chat, cons []*worker
	t.Setenv("SESSION_TEST_PACE", "1")
	for p := range procs {
		chat = append(chat, startWorker(t, "turns", dir, fmt.Sprint("p", p), turns))
	}
	for c := range consolidators {
		cons = append(cons, startWorker(t, "consolidate", dir, fmt.Sprint("c", c), runs))
	}
	for _, w := range chat {
		w.wait(t)
	}
	os.WriteFile(filepath.Join(dir, "chat-done"), nil, 0o600)
	for _, w := range cons {
		w.wait(t)
	}
	if t.Failed() {
		return
	}
	h, err := messages.ReadSessionFile(filepath.Join(dir, ".loom/sessions", session.FileName(key)), messages.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkTurns(t, h.Messages, procs, turns)
	if last := h.Meta.LastConsolidated; last > len(h.Messages) || (last > 0 && last < len(h.Messages) && h.Messages[last].Role != messages.RoleUser) {
		t.Errorf("pointer %d is not at a user turn of %d messages", last, len(h.Messages))
	}
	// Every fact a consolidation wrote is still in MEMORY.md: no run
	// overwrote another's.
	mem, _ := os.ReadFile(filepath.Join(dir, "memory/MEMORY.md"))
	hist, _ := os.ReadFile(filepath.Join(dir, "memory/HISTORY.md"))
	facts := 0
	for _, w := range cons {
		for _, fact := range strings.Split(strings.TrimSpace(w.out.String()), "\n") {
			if fact == "" {
				continue
			}
			facts++
			if !strings.Contains(string(mem), fact+"\n") {
				t.Errorf("MEMORY.md lost %q:\n%s", fact, mem)
			}
			if !strings.Contains(string(hist), fact+"\n") {
				t.Errorf("HISTORY.md lacks %q", fact)
			}
		}
	}
	if facts < 2 {
		t.Errorf("%d consolidations ran; the test proves little", facts)
	}
	t.Logf("%d messages, pointer %d, %d consolidations", len(h.Messages), h.Meta.LastConsolidated, facts)
}
