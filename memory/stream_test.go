package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The staged import's checks, done with queries, agree with the Go
// reference (PrepareImport, then CheckImportLinks against an empty store)
// on random imports with ids given twice, loops, links to nowhere and
// across scopes, several staging batches long: the same memory named, the
// same words.
func TestStagedImportAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 26))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 100 {
		n := 1 + rng.IntN(4*stageBatch)
		ms := make([]Memory, n)
		for i := range ms {
			ms[i] = Memory{ID: fmt.Sprintf("r%d", i), Category: "global_rule", Content: fmt.Sprintf("Rule %d.", i), CreatedAt: t0.Add(time.Duration(i) * time.Second)}
			if rng.IntN(3) == 0 {
				ms[i].User = "u"
			}
		}
		// A few faults, each more or less likely, so that some rounds
		// have none and some have several.
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
		var want error
		clean, err := PrepareImport(DefaultCategories, t0, ms)
		if err == nil {
			err = CheckImportLinks(clean, func(string) (string, bool, error) { return "", false, nil })
		}
		want = err
		s, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		got := s.Import(ctx, ms)
		s.Close()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d (%d memories): staged import says %v\nthe reference says %v", round, n, got, want)
		}
		gi, wi := -1, -1
		var ie *ImportError
		if errors.As(got, &ie) {
			gi = ie.Index
		}
		if errors.As(want, &ie) {
			wi = ie.Index
		}
		if gi != wi {
			t.Fatalf("round %d: staged import blames memory %d, the reference %d (%v)", round, gi, wi, want)
		}
	}
}
