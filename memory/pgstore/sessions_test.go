package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/messages"
)

func msg(role messages.Role, text string) messages.Message {
	return messages.Message{Role: role, Content: messages.TextContent(text)}
}

func texts(ms []messages.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Content.Text)
	}
	return strings.Join(out, " ")
}

func TestPGSessionSteps(t *testing.T) {
	s := openDB(t, WithoutListen()).Sessions(workspaceName(t))
	st, err := s.Load(ctx, "k")
	if err != nil || len(st.Messages) != 0 || st.Consolidated != 0 {
		t.Fatalf("new session: %+v, %v", st, err)
	}
	if err := s.Append(ctx, "k", msg(messages.RoleUser, "a"), msg(messages.RoleAssistant, "b")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "k", msg(messages.RoleUser, "c"), msg(messages.RoleAssistant, "d")); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Load(ctx, "k")
	if texts(st.Messages) != "a b c d" || st.Messages[1].Role != messages.RoleAssistant {
		t.Errorf("loaded %q", texts(st.Messages))
	}
	if err := s.MoveConsolidated(ctx, "k", 0, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.MoveConsolidated(ctx, "k", 0, 3); !errors.Is(err, ErrPointerMoved) {
		t.Errorf("stale from: err = %v", err)
	}
	if err := s.MoveConsolidated(ctx, "k", 2, 9); err == nil {
		t.Errorf("pointer past the end accepted")
	}
	if err := s.MoveConsolidated(ctx, "k", 2, 1); err == nil {
		t.Errorf("pointer moved backwards")
	}
	st, _ = s.Load(ctx, "k")
	if st.Consolidated != 2 {
		t.Errorf("pointer = %d, want 2", st.Consolidated)
	}
	if err := s.Trim(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	s.Append(ctx, "k", msg(messages.RoleUser, "e"))
	st, _ = s.Load(ctx, "k")
	if texts(st.Messages) != "d e" || st.Consolidated != 0 {
		t.Errorf("after trim: %q pointer %d", texts(st.Messages), st.Consolidated)
	}
	// Extra keys and the time survive the round trip.
	m := msg(messages.RoleAssistant, "cut reply")
	m = m.WithExtra(map[string]json.RawMessage{"loom_cut": json.RawMessage(`"interrupted"`)})
	m.Time = time.Date(1600, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Append(ctx, "x", m)
	st, _ = s.Load(ctx, "x")
	if len(st.Messages) != 1 || string(st.Messages[0].Extra()["loom_cut"]) != `"interrupted"` || !st.Messages[0].Time.Equal(m.Time) {
		t.Errorf("round trip: %+v", st.Messages)
	}
}

// Appends from two replicas to one session: every message once, each
// Append's messages together, each writer's in its order.
func TestPGSessionConcurrentAppends(t *testing.T) {
	ws := workspaceName(t)
	replicas := []*Sessions{openDB(t, WithoutListen()).Sessions(ws), openDB(t, WithoutListen()).Sessions(ws)}
	const writers, turns = 6, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := replicas[w%2]
			for i := range turns {
				if err := s.Append(ctx, "shared", msg(messages.RoleUser, fmt.Sprintf("w%d-%d-q", w, i)), msg(messages.RoleAssistant, fmt.Sprintf("w%d-%d-a", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st, err := replicas[0].Load(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != writers*turns*2 {
		t.Fatalf("%d messages, want %d", len(st.Messages), writers*turns*2)
	}
	next := make([]int, writers)
	for i := 0; i < len(st.Messages); i += 2 {
		var w, n int
		q, a := st.Messages[i].Content.Text, st.Messages[i+1].Content.Text
		fmt.Sscanf(q, "w%d-%d-q", &w, &n)
		if a != fmt.Sprintf("w%d-%d-a", w, n) {
			t.Fatalf("message %d: %q then %q: an append was interleaved", i, q, a)
		}
		if n != next[w] {
			t.Fatalf("writer %d: turn %d after %d", w, n, next[w]-1)
		}
		next[w]++
	}
}

// Two replicas serving one session take turns under its lock: a turn
// (load, then append the pair) never overlaps another.
func TestPGSessionLockSerialisesTurns(t *testing.T) {
	ws := workspaceName(t)
	replicas := []*Sessions{openDB(t, WithoutListen()).Sessions(ws), openDB(t, WithoutListen()).Sessions(ws)}
	var inside atomic.Int32
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := replicas[w%2]
			for i := range 10 {
				release, err := s.Lock(ctx, "turns")
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					t.Error("two turns inside the lock at once")
				}
				st, err := s.Load(ctx, "turns")
				if err == nil {
					n := len(st.Messages)
					err = s.Append(ctx, "turns", msg(messages.RoleUser, fmt.Sprintf("q%d", n)), msg(messages.RoleAssistant, fmt.Sprintf("a%d", n)))
				}
				if err != nil {
					t.Error(err)
				}
				inside.Add(-1)
				release()
				_ = i
			}
		}()
	}
	wg.Wait()
	st, _ := replicas[0].Load(ctx, "turns")
	for i := 0; i < len(st.Messages); i += 2 {
		if st.Messages[i].Content.Text != fmt.Sprintf("q%d", i) {
			t.Fatalf("message %d is %q: a turn read a stale session", i, st.Messages[i].Content.Text)
		}
	}
	if len(st.Messages) != 80 {
		t.Errorf("%d messages, want 80", len(st.Messages))
	}
}

// Two replicas consolidate the same messages at once: one wins, the other
// finds the pointer moved, and the memory files hold one consolidation.
func TestPGConsolidateOnceAcrossReplicas(t *testing.T) {
	ws := workspaceName(t)
	a, b := openDB(t, WithoutListen()).Sessions(ws), openDB(t, WithoutListen()).Sessions(ws)
	for i := range 10 {
		a.Append(ctx, "k", msg(messages.RoleUser, fmt.Sprintf("m%d", i)))
	}
	for round := range 5 {
		from := round * 2
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, s := range []*Sessions{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Consolidate(ctx, "k", from, from+2, MemoryFiles{User: "u", Memory: fmt.Sprintf("# Memory after round %d by %d\n", round, i), HistoryAppend: fmt.Sprintf("[round %d by %d]\n\n", round, i)})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrPointerMoved):
				t.Fatal(err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d consolidations won, want 1 (%v)", round, won, errs)
		}
	}
	hist, ok, err := a.ReadFile(ctx, "u", HistoryFileName)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if n := strings.Count(hist, "[round "); n != 5 {
		t.Errorf("HISTORY.md holds %d entries, want 5:\n%s", n, hist)
	}
	mem, _, _ := b.ReadFile(ctx, "u", MemoryFileName)
	if !strings.HasPrefix(mem, "# Memory after round 4") {
		t.Errorf("MEMORY.md = %q", mem)
	}
	st, _ := b.Load(ctx, "k")
	if st.Consolidated != 10 {
		t.Errorf("pointer %d, want 10", st.Consolidated)
	}
}

// A replica killed with SIGKILL while it holds a session's lock: the
// server drops its connection, the lock goes with it, and the session is
// readable and writable from another replica.
func TestPGSessionLockReleasedOnSIGKILL(t *testing.T) {
	if os.Getenv("LOOM_PG_LOCK_HOLDER") != "" {
		holdLockForever()
		return
	}
	ws := workspaceName(t)
	s := openDB(t, WithoutListen()).Sessions(ws)
	s.Append(ctx, "k", msg(messages.RoleUser, "before"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestPGSessionLockReleasedOnSIGKILL$")
	cmd.Env = append(os.Environ(), "LOOM_PG_LOCK_HOLDER="+ws)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "LOCKED" {
		cmd.Process.Kill()
		t.Fatalf("holder did not take the lock: %q %v", buf, err)
	}
	// Held: another replica cannot take it now.
	c, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = s.Lock(c, "k")
	cancel()
	if err == nil {
		t.Fatal("took a lock another process holds")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	c, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	release, err := s.Lock(c, "k")
	if err != nil {
		t.Fatalf("lock after the holder was killed: %v", err)
	}
	t.Logf("lock free %v after SIGKILL", time.Since(start).Round(time.Millisecond))
	defer release()
	if err := s.Append(ctx, "k", msg(messages.RoleAssistant, "after")); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load(ctx, "k")
	if err != nil || texts(st.Messages) != "before mid-turn after" {
		t.Errorf("session after the kill: %q, %v (the holder's append was committed before the kill)", texts(st.Messages), err)
	}
}

// holdLockForever is the killed replica: it takes the lock, appends inside
// it, says so, and waits to be killed.
func holdLockForever() {
	dsn := os.Getenv("LOOM_TEST_PG_DSN")
	db, err := Open(ctx, dsn, WithoutListen())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := db.Sessions(os.Getenv("LOOM_PG_LOCK_HOLDER"))
	if _, err := s.Lock(ctx, "k"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := s.Append(ctx, "k", msg(messages.RoleUser, "mid-turn")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.WriteString("LOCKED")
	select {}
}
