package memory

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomctx/loom/tokens"
)

// TestConcurrentWritersAndRenders runs 8 writers adding 1,000 memories each
// while readers list and select. Nothing may fail, no row may be lost, and
// every read must see a consistent state: each writer's memories form a
// prefix of what it wrote (a write is never seen before an earlier one),
// and a superseded memory is never active at the same time as its
// replacement.
func TestConcurrentWritersAndRenders(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	s, _ := openTest(t)
	counter := newBPE(t, tokens.O200kBase)
	const writers = 8
	each := 1000
	if raceEnabled {
		each = 150 // the race detector slows SQLite about twentyfold
	}
	var done atomic.Bool
	var readers sync.WaitGroup
	var reads atomic.Int64
	for r := range 2 {
		readers.Go(func() {
			for !done.Load() {
				ms, err := s.List(ctx, Query{AllUsers: true})
				if err != nil {
					t.Error(err)
					return
				}
				if err := consistent(ms, writers); err != nil {
					t.Error(err)
					return
				}
				sel := Select(ms, DefaultCategories, DefaultBudget, counter, SelectOptions{ExcludeChat: fmt.Sprintf("chat-%d", r)})
				if sel.Tokens > DefaultBudget || sel.Chosen+len(sel.LeftOut) != len(ms) {
					t.Errorf("selection of %d memories: %d tokens, %d chosen, %d left out", len(ms), sel.Tokens, sel.Chosen, len(sel.LeftOut))
					return
				}
				reads.Add(1)
				time.Sleep(10 * time.Millisecond) // a render now and then, not a busy loop
			}
		})
	}
	var writersWG sync.WaitGroup
	for w := range writers {
		writersWG.Go(func() {
			prev := ""
			for i := range each {
				n := NewMemory{
					Category: []string{"global_rule", "personal_fact"}[i%2],
					Content:  fmt.Sprintf("writer %d memory %d", w, i),
					User:     fmt.Sprintf("user-%d", w%3),
					Chat:     fmt.Sprintf("chat-%d", i%4),
				}
				// Every tenth memory replaces the writer's previous one.
				if i%10 == 9 {
					n.Supersedes = prev
				}
				ms, err := s.Add(ctx, n)
				if err != nil {
					t.Errorf("writer %d add %d: %v", w, i, err)
					return
				}
				prev = ms[0].ID
			}
		})
	}
	writersWG.Wait()
	done.Store(true)
	readers.Wait()

	all, err := s.List(ctx, Query{AllUsers: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*each {
		t.Fatalf("%d rows, want %d", len(all), writers*each)
	}
	active, _ := s.List(ctx, Query{AllUsers: true})
	if want := writers * (each - each/10); len(active) != want {
		t.Errorf("%d active, want %d", len(active), want)
	}
	t.Logf("%d consistent reads during the writes", reads.Load())
}

// consistent checks one read: for each writer the memories present are
// exactly numbers 0..k-1 minus the superseded ones.
func consistent(ms []Memory, writers int) error {
	seen := make([]map[int]bool, writers)
	for i := range seen {
		seen[i] = map[int]bool{}
	}
	for _, m := range ms {
		var w, i int
		if _, err := fmt.Sscanf(m.Content, "writer %d memory %d", &w, &i); err != nil {
			return fmt.Errorf("unexpected content %q", m.Content)
		}
		if seen[w][i] {
			return fmt.Errorf("writer %d memory %d listed twice", w, i)
		}
		seen[w][i] = true
	}
	for w, got := range seen {
		top := -1
		for i := range got {
			top = max(top, i)
		}
		for i := 0; i <= top; i++ {
			superseded := i%10 == 8 && i+1 <= top
			if got[i] == superseded {
				return fmt.Errorf("writer %d: memory %d present=%v with %d the newest", w, i, got[i], top)
			}
		}
	}
	return nil
}
