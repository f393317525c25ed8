package pgstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/storetest"
)

// BenchmarkNearest is the search by meaning in PostgreSQL (exact cosine in
// Go over the vectors read) at 10,000 memories of one user with vectors of
// 384 values, beside the search by words of the same store in the same
// run. Each reports its median as p50-ns/op. NEEDS PostgreSQL.
func BenchmarkNearest(b *testing.B) {
	s := openDB(b).Memory(workspaceName(b))
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 3))
	words := strings.Fields("sister city train office garden report budget dentist school piano harbour kitchen invoice bicycle")
	sentence := func(n int) string {
		var w []string
		for range n {
			w = append(w, words[rng.IntN(len(words))]+fmt.Sprint(rng.IntN(300)))
		}
		return strings.Join(w, " ")
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := make([]memory.Memory, 10000)
	for i := range ms {
		ms[i] = memory.Memory{ID: fmt.Sprintf("b%05d", i), Category: "personal_fact", User: "ana", Content: sentence(12), CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
	}
	if err := s.Import(ctx, ms); err != nil {
		b.Fatal(err)
	}
	randVec := func() []float32 {
		v := make([]float32, 384)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	storetest.EmbedAll(b, s, "bench", func(string) []float32 { return randVec() })
	report := func(b *testing.B, times []time.Duration) {
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns/op")
	}
	b.Run("search", func(b *testing.B) {
		var times []time.Duration
		for b.Loop() {
			t := time.Now()
			hits, err := s.Search(ctx, memory.SearchQuery{Text: sentence(12), User: "ana", Limit: 40})
			times = append(times, time.Since(t))
			if err != nil || len(hits) == 0 {
				b.Fatal(len(hits), err)
			}
		}
		report(b, times)
	})
	b.Run("nearest", func(b *testing.B) {
		var times []time.Duration
		for b.Loop() {
			t := time.Now()
			hits, err := s.Nearest(ctx, memory.VectorQuery{Model: "bench", Vector: randVec(), User: "ana", Limit: 40})
			times = append(times, time.Since(t))
			if err != nil || len(hits) != 40 {
				b.Fatal(len(hits), err)
			}
		}
		report(b, times)
	})
}
