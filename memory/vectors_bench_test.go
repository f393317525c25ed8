package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkNearest is the search by meaning at 10,000 memories of one
// user, with vectors of 384 and 1,536 values (the lengths of common small
// and mid-size embedding models), beside the search by words of the same
// store in the same run ("search") and the plain reference that reads and
// sorts every vector ("plain"). Each reports its median as p50-ns/op.
func BenchmarkNearest(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	z := newZipfText(1)
	if err := s.Import(ctx, z.memories(10000, "ana")); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	randVec := func(d int) []float32 {
		v := make([]float32, d)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	dims := []int{384, 1536}
	for _, d := range dims {
		model := fmt.Sprintf("bench@%d", d)
		for {
			todo, _, err := s.Unembedded(ctx, model, 0, 1000)
			if err != nil {
				b.Fatal(err)
			}
			if len(todo) == 0 {
				break
			}
			vs := make([]Vector, len(todo))
			for i, u := range todo {
				vs[i] = Vector{Key: u.Key, Values: randVec(d)}
			}
			if err := s.PutVectors(ctx, model, vs); err != nil {
				b.Fatal(err)
			}
		}
	}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = z.sentence(12) + " " + z.sentence(12)
	}
	b.Run("search", func(b *testing.B) {
		var p p50
		i := 0
		for b.Loop() {
			t0 := time.Now()
			hits, err := s.Search(ctx, SearchQuery{Text: queries[i%len(queries)], User: "ana", Limit: 40})
			p.add(time.Since(t0))
			if err != nil || len(hits) == 0 {
				b.Fatal(len(hits), err)
			}
			i++
		}
		p.report(b)
	})
	for _, d := range dims {
		model := fmt.Sprintf("bench@%d", d)
		qs := make([][]float32, 64)
		for i := range qs {
			qs[i] = randVec(d)
		}
		for _, v := range []struct {
			name string
			fn   func(VectorQuery) ([]Hit, error)
		}{{"nearest", func(q VectorQuery) ([]Hit, error) { return s.Nearest(ctx, q) }}, {"plain", func(q VectorQuery) ([]Hit, error) { return s.nearestPlain(ctx, q) }}} {
			b.Run(fmt.Sprintf("dims=%d/%s", d, v.name), func(b *testing.B) {
				var p p50
				i := 0
				for b.Loop() {
					t0 := time.Now()
					hits, err := v.fn(VectorQuery{Model: model, Vector: qs[i%len(qs)], User: "ana", Limit: 40})
					p.add(time.Since(t0))
					if err != nil || len(hits) != 40 {
						b.Fatal(len(hits), err)
					}
					i++
				}
				p.report(b)
			})
		}
	}
}
