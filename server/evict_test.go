package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/server"
	"github.com/loomctx/loom/session"
)

// Past its cap (MaxOpenSessions, per engine) the engine closes the least
// recently used session no request holds, and never one a request holds:
// a request handed a session can always finish its turn, however many
// other sessions open meanwhile.
func TestSessionEviction(t *testing.T) {
	dir, _ := modelWorkspace(t, "ok", "The user likes tea.")
	s, _ := newServer(t, server.Options{Dir: dir})
	ws, err := s.Workspace("default")
	if err != nil {
		t.Fatal(err)
	}
	e, err := ws.Engine()
	if err != nil {
		t.Fatal(err)
	}
	e.MaxOpenSessions = 3
	ctx := context.Background()
	open := func(key string) (*session.Session, func()) {
		t.Helper()
		sess, release, err := e.Session(ctx, ws, server.SessionOptions{Key: key})
		if err != nil {
			t.Fatalf("session %s: %v", key, err)
		}
		return sess, release
	}
	use := func(key string) *session.Session { sess, release := open(key); release(); return sess }
	closed := func(sess *session.Session) bool {
		// Eviction closes in the background: wait for it, briefly.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			p, err := sess.Prepare(ctx, session.TurnInput{Text: "are you open?"})
			if err == nil {
				p.Release()
			}
			if errors.Is(err, session.ErrClosed) {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}
	turn := func(sess *session.Session, text string) error {
		res, err := sess.Turn(ctx, session.TurnInput{Text: text})
		if err == nil && (res.Reply != "ok" || !res.Saved) {
			err = fmt.Errorf("turn: %+v", res)
		}
		return err
	}

	// Least recently used first: a, b, c opened, a used again, so d's
	// opening closes b, not a.
	a, b, c := use("a"), use("b"), use("c")
	if use("a") != a {
		t.Fatal("a was reopened while under the cap")
	}
	use("d")
	if !closed(b) {
		t.Fatal("b, the least recently used, is still open past the cap")
	}
	if n := e.OpenSessions(); n != 3 {
		t.Fatalf("%d sessions open, want the cap, 3", n)
	}
	// c is now the least recently used, then a.
	use("e")
	if !closed(c) {
		t.Fatal("c, the least recently used, is still open")
	}
	if got := use("a"); got != a {
		t.Fatal("a, used more recently than c, was closed")
	}

	// A held session survives any number of others opening, first as the
	// least recently used one, and its turn works afterwards.
	held, release := open("held")
	for i := range 10 {
		use(fmt.Sprintf("x%d", i))
	}
	if err := turn(held, "still here?"); err != nil {
		t.Fatalf("the held session, after 10 others opened past the cap: %v", err)
	}
	if again := use("held"); again != held {
		t.Fatal("the held session was closed and reopened")
	}
	release()

	// Past the cap with every session held: none is closed, every turn
	// ends well; released, the oldest go first, down to the cap.
	const n = 6
	var (
		sessions = make([]*session.Session, n)
		releases = make([]func(), n)
	)
	for i := range n {
		sessions[i], releases[i] = open(fmt.Sprintf("h%d", i))
	}
	if got := e.OpenSessions(); got < n {
		t.Fatalf("%d sessions open while %d are held", got, n)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = turn(sessions[i], fmt.Sprintf("turn %d", i)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("held session h%d, %d held past a cap of 3: %v", i, n, err)
		}
	}
	for i := range n {
		releases[i]()
	}
	if got := e.OpenSessions(); got != 3 {
		t.Fatalf("%d sessions open after the holds ended, want 3", got)
	}
	for i := range n - 3 {
		if !closed(sessions[i]) {
			t.Errorf("h%d, among the least recently used, is still open", i)
		}
	}
	for i := n - 3; i < n; i++ {
		if use(fmt.Sprintf("h%d", i)) != sessions[i] {
			t.Errorf("h%d, among the most recently used, was closed", i)
		}
	}
}
