package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/workspace"
)

func pgStore(t *testing.T, workspace string) *session.PGStore {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := session.OpenPGStore(ctx, dsn, workspace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func uniqueWorkspace(t *testing.T) string {
	return fmt.Sprintf("sessiontest/%s/%d", t.Name(), time.Now().UnixNano())
}

// The PostgreSQL store keeps the Store contract: ordered appends, the
// pointer with ErrPointerMoved, Trim, and the memory files written with
// the pointer in one step.
func TestPGStoreSteps(t *testing.T) {
	ctx := context.Background()
	var st session.Store = pgStore(t, uniqueWorkspace(t))
	empty, err := st.Load(ctx, "k")
	if err != nil || empty.Key != "k" || len(empty.Messages) != 0 {
		t.Fatalf("new session: %+v, %v", empty, err)
	}
	for i := range 3 {
		if err := st.Append(ctx, "k",
			messages.Message{Role: messages.RoleUser, Content: messages.TextContent(fmt.Sprint("q", i))},
			messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(fmt.Sprint("a", i))}); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := st.Load(ctx, "k")
	if len(s.Messages) != 6 || s.Messages[4].Content.Text != "q2" || s.CreatedAt.IsZero() || s.UpdatedAt.Before(s.CreatedAt) {
		t.Fatalf("loaded %+v", s)
	}
	if err := st.MoveConsolidated(ctx, "k", 0, 4); err != nil {
		t.Fatal(err)
	}
	if err := st.MoveConsolidated(ctx, "k", 0, 6); !errors.Is(err, session.ErrPointerMoved) {
		t.Errorf("stale pointer: err = %v, want session.ErrPointerMoved", err)
	}
	s, _ = st.Load(ctx, "k")
	if s.LastConsolidated != 4 || len(s.Unconsolidated()) != 2 {
		t.Errorf("pointer %d", s.LastConsolidated)
	}
	pg := st.(*session.PGStore)
	if err := pg.Consolidated(ctx, "k", "ana", 4, 6, "# Memory\nTea.\n", "[2026-03-01] tea\n\n"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Consolidated(ctx, "k", "ana", 4, 6, "# lost\n", "[lost]\n\n"); !errors.Is(err, session.ErrPointerMoved) {
		t.Errorf("second consolidation: err = %v", err)
	}
	if text, ok, err := pg.MemoryFile(ctx, "ana", "MEMORY.md"); err != nil || !ok || text != "# Memory\nTea.\n" {
		t.Errorf("MEMORY.md = %q %v %v", text, ok, err)
	}
	if err := st.Trim(ctx, "k", 6); err != nil {
		t.Fatal(err)
	}
	s, _ = st.Load(ctx, "k")
	if len(s.Messages) != 0 || s.LastConsolidated != 0 {
		t.Errorf("after trim: %+v", s)
	}
}

// overlapClient notices when two turns' model calls overlap.
type overlapClient struct {
	stubClient
	inside, overlaps atomic.Int32
}

func (c *overlapClient) Stream(ctx context.Context, req llm.Request, on func(string)) (llm.Response, error) {
	if c.inside.Add(1) > 1 {
		c.overlaps.Add(1)
	}
	defer c.inside.Add(-1)
	time.Sleep(3 * time.Millisecond)
	return c.stubClient.Stream(ctx, req, on)
}

func (c *overlapClient) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return c.Stream(ctx, req, func(string) {})
}

// Two replicas (each its own pool) serve one session: Session.Turn holds
// the store's LockTurn, so their turns run one after the other (no two
// model calls overlap) and every turn is kept once, whole.
func TestPGStoreTwoReplicasOneSession(t *testing.T) {
	ws := newWorkspace(t)
	key := uniqueWorkspace(t)
	c := &overlapClient{stubClient: stubClient{reply: "ok"}}
	var sessions []*session.Session
	var stores []*session.PGStore
	for range 2 {
		st := pgStore(t, "shared")
		stores = append(stores, st)
		s, err := session.Open(context.Background(), session.Options{Workspace: ws, Key: key, Channel: "cli", User: "ana", Client: c, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		sessions = append(sessions, s)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := sessions[i%2].Turn(context.Background(), session.TurnInput{Text: fmt.Sprint("m", i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := c.overlaps.Load(); n > 0 {
		t.Errorf("%d model calls overlapped: turns of one session ran at once on two replicas", n)
	}
	st, err := stores[0].Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 32 {
		t.Fatalf("%d messages, want 32", len(st.Messages))
	}
	seen := map[string]bool{}
	for i := 0; i < 32; i += 2 {
		u, a := st.Messages[i], st.Messages[i+1]
		if u.Role != messages.RoleUser || a.Role != messages.RoleAssistant || seen[u.Content.Text] {
			t.Fatalf("message %d: %s %q then %s: interleaved or repeated", i, u.Role, u.Content.Text, a.Role)
		}
		seen[u.Content.Text] = true
	}
}

var _ = pgstore.WorkspaceKey

// The env that makes this test binary a replica process for
// TestPGStoreReplicaProcesses.
const pgWorkerEnv = "LOOM_PG_TURN_WORKER"

func init() {
	if os.Getenv(pgWorkerEnv) != "" {
		os.Exit(runPGWorker())
	}
}

// logClient appends "S pid" and "E pid" around each model call to a file
// shared by the replica processes.
type logClient struct {
	stubClient
	log string
}

func (c *logClient) Stream(ctx context.Context, req llm.Request, on func(string)) (llm.Response, error) {
	mark := func(s string) {
		f, err := os.OpenFile(c.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%s %d\n", s, os.Getpid())
			f.Close()
		}
	}
	mark("S")
	time.Sleep(5 * time.Millisecond)
	mark("E")
	return c.stubClient.Stream(ctx, req, on)
}

func (c *logClient) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return c.Stream(ctx, req, func(string) {})
}

// runPGWorker takes n turns on the shared session, as one replica.
func runPGWorker() int {
	dir, key, logPath := os.Getenv("PGW_DIR"), os.Getenv("PGW_KEY"), os.Getenv("PGW_LOG")
	n, _ := strconv.Atoi(os.Getenv("PGW_N"))
	ws, err := workspace.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st, err := session.OpenPGStore(context.Background(), os.Getenv("LOOM_TEST_PG_DSN"), "shared")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	s, err := session.Open(context.Background(), session.Options{Workspace: ws, Key: key, Channel: "cli", User: "ana",
		Client: &logClient{stubClient: stubClient{reply: "ok"}, log: logPath}, Store: st})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close(context.Background())
	for i := range n {
		if _, err := s.Turn(context.Background(), session.TurnInput{Text: fmt.Sprintf("p%d-%d", os.Getpid(), i)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// Three replica processes serve one session on PostgreSQL: their model
// calls never overlap (each turn holds the session's lock across
// processes), and every turn is kept once, whole, in each process's order.
func TestPGStoreReplicaProcesses(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	ws := newWorkspace(t)
	key := uniqueWorkspace(t)
	logPath := filepath.Join(t.TempDir(), "calls.log")
	const procs, turns = 3, 8
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), pgWorkerEnv+"=1", "LOOM_TEST_PG_DSN="+dsn, "PGW_DIR="+ws.Root(), "PGW_KEY="+key, "PGW_LOG="+logPath, fmt.Sprintf("PGW_N=%d", turns))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("replica process: %v", err)
		}
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != procs*turns*2 {
		t.Fatalf("%d marks, want %d", len(lines), procs*turns*2)
	}
	for i := 0; i < len(lines); i += 2 {
		s, e := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if s[0] != "S" || e[0] != "E" || s[1] != e[1] {
			t.Fatalf("marks %d–%d: %q then %q: two replicas ran a turn of one session at once", i, i+1, lines[i], lines[i+1])
		}
	}
	st, err := pgStore(t, "shared").Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != procs*turns*2 {
		t.Fatalf("%d messages, want %d", len(st.Messages), procs*turns*2)
	}
	next := map[string]int{}
	for i := 0; i < len(st.Messages); i += 2 {
		u, a := st.Messages[i], st.Messages[i+1]
		var pid, n int
		fmt.Sscanf(u.Content.Text, "p%d-%d", &pid, &n)
		if u.Role != messages.RoleUser || a.Role != messages.RoleAssistant || n != next[fmt.Sprint(pid)] {
			t.Fatalf("message %d: %q (%s) then %s: interleaved, lost or out of order", i, u.Content.Text, u.Role, a.Role)
		}
		next[fmt.Sprint(pid)]++
	}
}

// AppendTurn stores a turn once: a second append with the same turn ID
// (a retry whose first commit the replica did not see answered) stores
// nothing, another ID stores.
func TestPGStoreAppendTurnOnce(t *testing.T) {
	ctx := context.Background()
	st := pgStore(t, uniqueWorkspace(t))
	turn := func(id, text string) messages.Message {
		raw, _ := json.Marshal(id)
		return messages.Message{Role: messages.RoleUser, Content: messages.TextContent(text)}.WithExtra(map[string]json.RawMessage{session.TurnKey: raw})
	}
	for i, c := range []struct {
		id, text string
		stored   bool
	}{{"t1", "one", true}, {"t1", "one again", false}, {"t2", "two", true}, {"t1", "one more", false}} {
		stored, err := st.AppendTurn(ctx, "k", c.id, turn(c.id, c.text))
		if err != nil || stored != c.stored {
			t.Fatalf("append %d (%s): stored %v, %v; want %v", i, c.id, stored, err, c.stored)
		}
	}
	s, _ := st.Load(ctx, "k")
	if len(s.Messages) != 2 || s.Messages[0].Content.Text != "one" || s.Messages[1].Content.Text != "two" {
		t.Fatalf("stored %+v", s.Messages)
	}
}

// PGStore's pointer read alone agrees with Load, and a session never
// written is at 0.
func TestPGStorePointer(t *testing.T) {
	ctx := context.Background()
	st := pgStore(t, uniqueWorkspace(t))
	if n, err := st.Pointer(ctx, "k"); err != nil || n != 0 {
		t.Fatalf("new session: %d, %v", n, err)
	}
	for i := range 2 {
		if err := st.Append(ctx, "k",
			messages.Message{Role: messages.RoleUser, Content: messages.TextContent(fmt.Sprint("q", i))},
			messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(fmt.Sprint("a", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.MoveConsolidated(ctx, "k", 0, 2); err != nil {
		t.Fatal(err)
	}
	n, err := st.Pointer(ctx, "k")
	loaded, lerr := st.Load(ctx, "k")
	if err != nil || lerr != nil || n != 2 || loaded.LastConsolidated != 2 {
		t.Errorf("Pointer %d (%v), Load %d (%v), want 2", n, err, loaded.LastConsolidated, lerr)
	}
}
