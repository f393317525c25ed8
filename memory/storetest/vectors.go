package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
)

// testVectors holds a store's vectors to the plain reference: its queue
// (Unembedded) is every active memory without a vector, oldest first; a
// vector is stored once; and Nearest agrees with memory.NearestPlain over
// the memories listed and the vectors the test wrote, with several users,
// forgotten and superseded memories, exact ties, and memories added after
// the first search. Run skips it for a store that keeps no vectors.
func testVectors(t *testing.T, open Opener) {
	n := 0
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	store := open(t, Config{Now: func() time.Time { return t0.Add(time.Duration(n) * time.Second) }, NewID: func() string { n++; return fmt.Sprintf("m_v%05d", n) }})
	vs, ok := store.(memory.VectorStore)
	if !ok {
		t.Skip("the store keeps no vectors")
	}
	c := &vectorCase{t: t, store: store, vs: vs, rng: rand.New(rand.NewPCG(7, 8)), vecOf: map[string][]float32{}, keyOf: map[string]int64{}}
	c.shared = c.randVec()
	var ms []memory.Memory
	for i := range 600 {
		ms = append(ms, memory.Memory{ID: fmt.Sprintf("imp%04d", i), Category: "personal_fact", Content: fmt.Sprintf("imported %d", i),
			User: []string{"", "u1", "u2"}[c.rng.IntN(3)], CreatedAt: t0.Add(-time.Duration(c.rng.IntN(50)) * time.Minute), Forgotten: c.rng.IntN(8) == 0})
	}
	if err := store.Import(ctx, ms); err != nil {
		t.Fatal(err)
	}
	active := 0
	for _, m := range ms {
		if !m.Forgotten {
			active++
		}
	}
	if got := c.embedAll("m"); got != active {
		t.Fatalf("the queue held %d memories, want the %d active ones", got, active)
	}
	c.embedAll("other")
	if todo, _, err := vs.Unembedded(ctx, "m", 0, 10); err != nil || len(todo) != 0 {
		t.Fatalf("queue after embedding: %v, %v", todo, err)
	}
	c.secondVectorIsPassedOver(ms)
	c.compare("imported")
	var more []memory.NewMemory
	for i := range 120 {
		more = append(more, memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("added %d", i), User: []string{"", "u2"}[i%2]})
	}
	added, err := store.Add(ctx, more...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: "replaces added 0", User: "", Supersedes: added[0].ID}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(ms); i += 29 {
		if !ms[i].Forgotten {
			if err := store.Forget(ctx, ms[i].ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := c.embedAll("m"); got != 120 {
		t.Fatalf("%d memories queued after adding 121 (one superseded): want 120", got)
	}
	c.compare("added")
	if c.checked < 500 {
		t.Errorf("only %d hits compared", c.checked)
	}
}

// vectorCase is testVectors' state: the vectors it wrote, by content
// (unique in the test), and how many hits it compared.
type vectorCase struct {
	t       *testing.T
	store   memory.Store
	vs      memory.VectorStore
	rng     *rand.Rand
	shared  []float32 // given to about one memory in eight: exact ties
	vecOf   map[string][]float32
	keyOf   map[string]int64
	maxKey  int64 // the newest memory's key seen
	checked int
}

const vectorDims = 8

func (c *vectorCase) randVec() []float32 {
	v := make([]float32, vectorDims)
	for i := range v {
		v[i] = float32(c.rng.NormFloat64())
	}
	return v
}

// embedAll drains the queue for model, 97 at a time, checking its order
// and what it says it looked through; it returns how many it embedded.
func (c *vectorCase) embedAll(model string) int {
	t := c.t
	total := 0
	var after int64
	for {
		todo, last, err := c.vs.Unembedded(ctx, model, after, 97)
		if err != nil {
			t.Fatal(err)
		}
		if len(todo) == 0 {
			// Nothing left: looked up to the newest memory.
			if last < after || (after > 0 && last < c.maxKey) {
				t.Fatalf("found nothing after %d and looked up to %d; the newest memory is %d", after, last, c.maxKey)
			}
			return total
		}
		if len(todo) == 97 && last != todo[96].Key {
			t.Fatalf("found a full batch up to %d, but says it looked up to %d", todo[96].Key, last)
		}
		batch := make([]memory.Vector, 0, len(todo))
		for i, u := range todo {
			if u.Key <= after || (i > 0 && u.Key <= todo[i-1].Key) {
				t.Fatalf("queue out of order: key %d after %d", u.Key, after)
			}
			v := c.randVec()
			if c.rng.IntN(8) == 0 {
				v = c.shared
			}
			if model == "m" {
				c.vecOf[u.Content], c.keyOf[u.Content] = v, u.Key
			}
			batch = append(batch, memory.Vector{Key: u.Key, Values: v})
		}
		after = last
		c.maxKey = max(c.maxKey, todo[len(todo)-1].Key)
		if err := c.vs.PutVectors(ctx, model, batch); err != nil {
			t.Fatal(err)
		}
		total += len(todo)
	}
}

// secondVectorIsPassedOver writes a second vector for one embedded memory;
// the store keeps the first.
func (c *vectorCase) secondVectorIsPassedOver(ms []memory.Memory) {
	for _, m := range ms {
		k, ok := c.keyOf[m.Content]
		if !ok {
			continue
		}
		if err := c.vs.PutVectors(ctx, "m", []memory.Vector{{Key: k, Values: c.randVec()}}); err != nil {
			c.t.Fatal(err)
		}
		got, err := c.vs.Nearest(ctx, memory.VectorQuery{Model: "m", Vector: c.vecOf[m.Content], User: m.User, Limit: 1})
		if err != nil || len(got) != 1 || math.Abs(got[0].Score-1) > 1e-5 {
			c.t.Fatalf("nearest to a stored vector: %+v, %v", got, err)
		}
		return
	}
}

// compare holds Nearest to memory.NearestPlain over every listed memory
// with a vector, for two query vectors, two users and three limits.
func (c *vectorCase) compare(stage string) {
	t := c.t
	t.Helper()
	all, err := c.store.List(ctx, memory.Query{All: true, AllUsers: true})
	if err != nil {
		t.Fatal(err)
	}
	var cs []memory.Candidate
	for _, m := range all {
		if v, ok := c.vecOf[m.Content]; ok {
			cs = append(cs, memory.Candidate{Memory: m, Key: c.keyOf[m.Content], Vector: v})
		}
	}
	for qi, qv := range [][]float32{c.randVec(), c.shared} {
		for _, user := range []string{"", "u2"} {
			for _, limit := range []int{1, 10, 100} {
				q := memory.VectorQuery{Model: "m", Vector: qv, User: user, Limit: limit}
				got, err := c.vs.Nearest(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				want := memory.NearestPlain(q, cs)
				if len(got) != len(want) {
					t.Fatalf("%s: query %d user %q limit %d: %d hits, plain %d", stage, qi, user, limit, len(got), len(want))
				}
				for i := range want {
					if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-5 || got[i].Content != want[i].Content {
						t.Fatalf("%s: query %d user %q limit %d: hit %d is %s %v, plain %s %v", stage, qi, user, limit, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
					}
					c.checked++
				}
			}
		}
	}
}

// WaitEmbedded waits, up to 20 seconds, until no active memory of s lacks
// a vector of model, failing t with the first one still waiting.
func WaitEmbedded(t testing.TB, s memory.VectorStore, model string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		todo, _, err := s.Unembedded(context.Background(), model, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(todo) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory %q still has no vector", todo[0].Content)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// EmbedAll gives every active memory of s that has no vector of model the
// vector vecOf makes from its content, a thousand at a time.
func EmbedAll(t testing.TB, s memory.VectorStore, model string, vecOf func(content string) []float32) {
	t.Helper()
	ctx := context.Background()
	var after int64
	for {
		todo, last, err := s.Unembedded(ctx, model, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(todo) == 0 {
			return
		}
		vs := make([]memory.Vector, len(todo))
		for i, u := range todo {
			vs[i] = memory.Vector{Key: u.Key, Values: vecOf(u.Content)}
		}
		if err := s.PutVectors(ctx, model, vs); err != nil {
			t.Fatal(err)
		}
		after = last
	}
}
