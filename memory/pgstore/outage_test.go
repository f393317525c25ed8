package pgstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
)

// The database goes away in the middle of a load and comes back: during
// the outage requests fail with an error matching memory.ErrUnavailable
// (a server's 503), after it they succeed on new connections without a
// restart, the listener comes back, and every acknowledged write is
// stored exactly once.
func TestPGOutageMidLoad(t *testing.T) {
	p, dsn := testenv.NewPGProxy(t, testenv.PostgresDSN(t))
	c := ctx
	db, err := Open(c, dsn, WithMaxConns(8))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := db.Memory(workspaceName(t))
	var (
		mu          sync.Mutex
		acked       []string
		unavailable int
		other       []error
		stop        = make(chan struct{})
		wg          sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ms, err := s.Add(c, memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("w%d fact %d", w, i), User: fmt.Sprintf("u%d", w)})
				mu.Lock()
				switch {
				case err == nil:
					acked = append(acked, ms[0].ID)
				case errors.Is(err, memory.ErrUnavailable):
					unavailable++
				default:
					other = append(other, err)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("writes before the outage", func() bool { return count() > 20 })
	p.Down()
	before := count()
	time.Sleep(700 * time.Millisecond)
	if n := count(); n > before+4 {
		t.Errorf("%d writes acknowledged during the outage", n-before)
	}
	if _, err := s.List(c, memory.Query{}); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("list during the outage: err = %v, want ErrUnavailable", err)
	}
	if db.Listening() {
		t.Errorf("still listening during the outage")
	}
	p.Up()
	during := count()
	waitFor("writes after the outage", func() bool { return count() > during+20 })
	waitFor("the listener to come back", db.Listening)
	close(stop)
	wg.Wait()
	if len(other) > 0 {
		t.Errorf("%d failures that do not say unavailable; first: %v", len(other), other[0])
	}
	if unavailable == 0 {
		t.Errorf("no request failed during the outage")
	}
	all, err := s.List(c, memory.Query{AllUsers: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, m := range all {
		stored[m.ID]++
	}
	for _, id := range acked {
		if stored[id] != 1 {
			t.Errorf("acknowledged %s stored %d times", id, stored[id])
		}
	}
	t.Logf("%d writes acknowledged, %d refused as unavailable, %d stored", len(acked), unavailable, len(all))
}
