package memory

import (
	"fmt"
	"os"
	"testing"

	"github.com/loomctx/loom/tokens"
)

// BenchmarkSelect chooses within the default budget with the real
// o200k_base tokenizer and no count cache, so each iteration pays for
// every line it tokenizes.
func BenchmarkSelect(b *testing.B) {
	for _, n := range []int{2000, 100000} {
		ms := genMemories(n, 11)
		counter := newBPE(b, tokens.O200kBase)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var sel Selection
			for b.Loop() {
				sel = Select(ms, DefaultCategories, DefaultBudget, counter, SelectOptions{ExcludeChat: "chat-1"})
			}
			b.ReportMetric(float64(sel.Counted), "counted/op")
			b.ReportMetric(float64(sel.Chosen), "chosen/op")
		})
	}
}

// BenchmarkSelectCountAll is the same selection with the lower bound
// switched off: every candidate line is tokenized. It shows what the bound
// saves.
func BenchmarkSelectCountAll(b *testing.B) {
	ms := genMemories(2000, 11)
	counter := newBPE(b, tokens.O200kBase)
	zero := func(string) int { return 0 }
	for b.Loop() {
		Select(ms, DefaultCategories, DefaultBudget, counter, SelectOptions{LowerBound: zero})
	}
}

// BenchmarkList reads one scope's active memories from SQLite, what a
// render does before selecting.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{2000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Import(ctx, genMemories(n, 11)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				ms, err := s.List(ctx, Query{User: "alex", ExcludeChat: "chat-1"})
				if err != nil || len(ms) != n {
					b.Fatal(len(ms), err)
				}
			}
		})
	}
}

// BenchmarkListWorkspace is a one-shot render's listing (every active
// workspace-wide memory), each time through a new handle, as a new process
// makes: from the database, and from the listing the last one kept beside
// it (listcache.go).
func BenchmarkListWorkspace(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		root := b.TempDir()
		s, err := Open(root)
		if err != nil {
			b.Fatal(err)
		}
		ms := genMemories(n, 11)
		for i := range ms {
			ms[i].User = "" // all workspace-wide
		}
		if err := s.Import(ctx, ms); err != nil {
			b.Fatal(err)
		}
		s.Close()
		for _, kept := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/kept=%v", n, kept), func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					h, err := Open(root)
					if err != nil {
						b.Fatal(err)
					}
					if !kept {
						os.Remove(h.listCachePath())
					}
					b.StartTimer()
					got, err := h.List(ctx, Query{})
					if err != nil || len(got) != n {
						b.Fatal(len(got), err)
					}
					b.StopTimer()
					h.Close()
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkAdd adds one memory per transaction.
func BenchmarkAdd(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Add(ctx, NewMemory{Category: "global_rule", Content: fmt.Sprintf("Rule %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}
