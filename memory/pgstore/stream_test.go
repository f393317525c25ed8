package pgstore

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
)

// The staged import's checks, done with queries, agree with the Go
// reference (PrepareImport, then CheckImportLinks against an empty store)
// on random imports with ids given twice, loops, links to nowhere and
// across scopes: the same memory named, the same words. (SQLite's staged
// import is held to the same reference by memory's own twin of this test.)
func TestPGStagedImportAgreesWithReference(t *testing.T) {
	db := openDB(t)
	rng := rand.New(rand.NewPCG(7, 26))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	faults := 0
	for round := range 100 {
		n := 1 + rng.IntN(200)
		ms := make([]memory.Memory, n)
		for i := range ms {
			ms[i] = memory.Memory{ID: fmt.Sprintf("r%d", i), Category: "global_rule", Content: fmt.Sprintf("Rule %d.", i), CreatedAt: t0.Add(time.Duration(i) * time.Second)}
			if rng.IntN(3) == 0 {
				ms[i].User = "u"
			}
		}
		for k := rng.IntN(4); k > 0; k-- {
			i, j := rng.IntN(n), rng.IntN(n)
			switch rng.IntN(6) {
			case 0:
				ms[i].ID = ms[j].ID // given twice (or unchanged when i == j)
			case 1:
				ms[i].SupersededBy = ms[j].ID // a link, maybe a loop or across scopes
				ms[i].User = ms[j].User
			case 2:
				ms[i].SupersededBy = "nowhere"
			case 3:
				ms[i].SupersededBy, ms[j].SupersededBy = ms[j].ID, ms[i].ID // a loop of two, or self
				ms[i].User = ms[j].User
			case 4:
				ms[i].Category = "hobby"
			case 5:
				ms[i].ID, ms[i].Category = ms[j].ID, "hobby" // twice and unknown: twice is said first
			}
		}
		clean, want := memory.PrepareImport(memory.DefaultCategories, t0, ms)
		if want == nil {
			want = memory.CheckImportLinks(clean, func(string) (string, bool, error) { return "", false, nil })
		}
		if want != nil {
			faults++
		}
		s := db.Memory(fmt.Sprintf("%s/%d", workspaceName(t), round), WithNow(func() time.Time { return t0 }))
		got := s.Import(ctx, ms)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d (%d memories): staged import says %v\nthe reference says %v", round, n, got, want)
		}
		gi, wi := -1, -1
		var ie *memory.ImportError
		if errors.As(got, &ie) {
			gi = ie.Index
		}
		if errors.As(want, &ie) {
			wi = ie.Index
		}
		if gi != wi {
			t.Fatalf("round %d: staged import blames memory %d, the reference %d (%v)", round, gi, wi, want)
		}
		stored, err := s.List(ctx, memory.Query{AllUsers: true, All: true})
		if err != nil {
			t.Fatal(err)
		}
		if wantN := map[bool]int{true: 0, false: n}[want != nil]; len(stored) != wantN {
			t.Fatalf("round %d: %d memories stored, want %d (all or nothing)", round, len(stored), wantN)
		}
	}
	t.Logf("%d of 100 rounds refused", faults)
}

// A streamed import is all or nothing: a source that fails after many
// good memories (a bad line, for the CLI) leaves the store as it was and
// its error comes back as it is; a memory refused after a duplicate id
// is blamed on the duplicate, the first fault read.
func TestPGImportFromAllOrNothing(t *testing.T) {
	s := openDB(t).Memory(workspaceName(t))
	bad := errors.New("line 5001: not JSON")
	i := 0
	n, err := s.ImportFrom(ctx, func() (memory.Memory, error) {
		if i == 5000 {
			return memory.Memory{}, bad
		}
		i++
		return memory.Memory{ID: fmt.Sprintf("m%d", i), Category: "global_rule", Content: "Rule."}, nil
	})
	if !errors.Is(err, bad) || n != 0 {
		t.Fatalf("import failing at memory 5000: n = %d, err = %v; want 0 and the source's error", n, err)
	}
	if got, _ := s.List(ctx, memory.Query{AllUsers: true, All: true}); len(got) != 0 {
		t.Fatalf("%d memories stored after a failed import, want none", len(got))
	}
	ms := []memory.Memory{
		{ID: "a", Category: "global_rule", Content: "A."},
		{ID: "a", Category: "global_rule", Content: "A again."},
		{ID: "b", Category: "hobby", Content: "B."},
	}
	var ie *memory.ImportError
	if _, err := s.ImportFrom(ctx, memory.SliceSource(ms)); !errors.As(err, &ie) || ie.Index != 1 || !errors.Is(err, memory.ErrDuplicateID) {
		t.Fatalf("duplicate before a refused memory: %v", err)
	}
	// Export streams back what a good import stored, oldest first.
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	good := []memory.Memory{
		{ID: "new", Category: "global_rule", Content: "Newer.", CreatedAt: t0.Add(time.Hour)},
		{ID: "old", Category: "personal_fact", Content: "Older.", CreatedAt: t0, User: "u", SupersededBy: "old2"},
		{ID: "old2", Category: "personal_fact", Content: "Older too.", CreatedAt: t0, User: "u", Forgotten: true},
	}
	if n, err := s.ImportFrom(ctx, memory.SliceSource(good)); err != nil || n != 3 {
		t.Fatalf("import: %d, %v", n, err)
	}
	var ids []string
	if err := s.ExportTo(ctx, func(m memory.Memory) error { ids = append(ids, m.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, " ") != "old old2 new" {
		t.Errorf("export order %v, want old old2 new (oldest first, then in import order)", ids)
	}
}

// An import's memory does not grow with its length: 100,000 memories
// (about 25 MB of content) are staged through COPY holding one at a time.
// The heap in use at the end of reading, sampled by the source, stays far
// below what the list would take.
func TestPGImportFromConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 memories")
	}
	s := openDB(t).Memory(workspaceName(t))
	const count = 100_000
	text := strings.Repeat("x", 250)
	var peak uint64
	i := 0
	n, err := s.ImportFrom(ctx, func() (memory.Memory, error) {
		if i == count {
			return memory.Memory{}, io.EOF
		}
		i++
		if i%20_000 == 0 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
		return memory.Memory{ID: fmt.Sprintf("m%07d", i), Category: "global_rule", Content: fmt.Sprintf("Rule %d %s", i, text)}, nil
	})
	if err != nil || n != count {
		t.Fatalf("import: %d, %v", n, err)
	}
	list := uint64(count * (250 + 200)) // the memories' text and structs, had they been held
	t.Logf("heap in use while staging %d memories: at most %.1f MiB (the list would take %.0f MiB)", count, float64(peak)/(1<<20), float64(list)/(1<<20))
	if peak > list/4 {
		t.Errorf("heap in use while staging reached %d MiB, a quarter of the list's %d MiB", peak>>20, list>>20)
	}
	var exported int
	if err := s.ExportTo(ctx, func(memory.Memory) error { exported++; return nil }); err != nil || exported != count {
		t.Fatalf("export: %d, %v", exported, err)
	}
}
