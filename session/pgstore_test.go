package session_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
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

// Two replicas (each its own pool) serve one session: every turn is kept
// once, whole. Each replica's turns run under LockTurn, as a server's
// handler does, so no turn builds on a history missing another's.
func TestPGStoreTwoReplicasOneSession(t *testing.T) {
	ws := newWorkspace(t)
	key := uniqueWorkspace(t)
	c := &stubClient{reply: "ok"}
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
			r := i % 2
			unlock, err := stores[r].LockTurn(context.Background(), key)
			if err != nil {
				t.Error(err)
				return
			}
			defer unlock()
			before, _ := stores[r].Load(context.Background(), key)
			if _, err := sessions[r].Turn(context.Background(), session.TurnInput{Text: fmt.Sprint("m", i)}); err != nil {
				t.Error(err)
			}
			after, _ := stores[r].Load(context.Background(), key)
			if len(after.Messages) != len(before.Messages)+2 {
				t.Errorf("a turn under the lock saw %d → %d messages", len(before.Messages), len(after.Messages))
			}
		}()
	}
	wg.Wait()
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
