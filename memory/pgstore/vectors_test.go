package pgstore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
)

// Nearest's copy of the vectors follows what another replica writes:
// vectors of newer memories, and vectors of older ones (a backfill),
// which make it read the copy again whole; it agrees with the plain
// reference each time.
func TestPGNearestFollowsOtherReplicas(t *testing.T) {
	ws := workspaceName(t)
	a := openDB(t).Memory(ws)
	defer a.Close()
	b := openDB(t).Memory(ws)
	defer b.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ms []memory.Memory
	for i := range 400 {
		ms = append(ms, memory.Memory{ID: fmt.Sprintf("p%03d", i), Category: "personal_fact", Content: fmt.Sprintf("memory %d", i),
			User: []string{"", "u1"}[i%2], CreatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	if err := a.Import(ctx, ms); err != nil {
		t.Fatal(err)
	}
	todo, _, err := a.Unembedded(ctx, "m", 0, 1000)
	if err != nil || len(todo) != 400 {
		t.Fatalf("queue: %d, %v", len(todo), err)
	}
	put := func(s *Memories, us []memory.Unembedded) {
		var vs []memory.Vector
		for _, u := range us {
			v := make([]float32, 6)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			vs = append(vs, memory.Vector{Key: u.Key, Values: v})
		}
		if err := s.PutVectors(ctx, "m", vs); err != nil {
			t.Fatal(err)
		}
	}
	compare := func(stage string) {
		t.Helper()
		for range 5 {
			q := make([]float32, 6)
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			for _, user := range []string{"", "u1"} {
				vq := memory.VectorQuery{Model: "m", Vector: q, User: user, Limit: 30}
				got, err := a.Nearest(ctx, vq)
				if err != nil {
					t.Fatal(err)
				}
				want, err := a.nearestPlain(ctx, vq)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d hits, plain %d", stage, len(got), len(want))
				}
				for i := range want {
					if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-5 {
						t.Fatalf("%s: hit %d is %s %v, plain %s %v", stage, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
					}
				}
			}
		}
	}
	put(a, todo[100:200])
	compare("first")
	put(b, todo[300:]) // newer memories, through the other replica
	compare("newer")
	put(b, todo[:100]) // older ones: a backfill
	compare("older")
	if err := b.Forget(ctx, ms[150].ID); err != nil {
		t.Fatal(err)
	}
	compare("forgotten")
}
