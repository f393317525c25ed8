package memory

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestVectorEncoding(t *testing.T) {
	// 1.0 is 0x3f800000 and -2.0 is 0xc0000000, little-endian.
	b := EncodeVector([]float32{1, -2})
	if want := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}; !bytes.Equal(b, want) {
		t.Fatalf("encoded % x, want % x", b, want)
	}
	v, err := DecodeVector(b)
	if err != nil || !slices.Equal(v, []float32{1, -2}) {
		t.Fatalf("decoded %v, %v", v, err)
	}
	if _, err := DecodeVector([]byte{1, 2, 3}); !errors.Is(err, ErrBadVector) {
		t.Errorf("3 bytes: %v", err)
	}
	for _, bad := range [][]float32{nil, {0, 0}, {1, float32(math.NaN())}, {float32(math.Inf(-1))}} {
		if err := CheckVector(bad); !errors.Is(err, ErrBadVector) {
			t.Errorf("CheckVector(%v) = %v", bad, err)
		}
	}
	if err := CheckVector([]float32{0, 1e-30}); err != nil {
		t.Errorf("a tiny vector: %v", err)
	}
	if c := Cosine([]float32{1, 0}, []float32{1, 1}); math.Abs(c-1/math.Sqrt2) > 1e-12 {
		t.Errorf("cosine of 45° = %v", c)
	}
}

func TestUnembeddedAndPutVectors(t *testing.T) {
	s := openSearchStore(t)
	ms, err := s.Add(ctx, NewMemory{Category: "personal_fact", Content: "one"}, NewMemory{Category: "personal_fact", Content: "two"},
		NewMemory{Category: "personal_fact", Content: "three", User: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, ms[1].ID); err != nil {
		t.Fatal(err)
	}
	todo, _, err := s.Unembedded(ctx, "m1", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(todo) != 2 || todo[0].Content != "one" || todo[1].Content != "three" || todo[0].Key >= todo[1].Key {
		t.Fatalf("unembedded: %+v (want one and three, oldest first; two is forgotten)", todo)
	}
	if got, _, _ := s.Unembedded(ctx, "m1", todo[0].Key, 10); len(got) != 1 || got[0].Content != "three" {
		t.Errorf("after the first: %+v", got)
	}
	if got, _, _ := s.Unembedded(ctx, "m1", 0, 1); len(got) != 1 || got[0].Content != "one" {
		t.Errorf("limit 1: %+v", got)
	}
	if err := s.PutVectors(ctx, "m1", []Vector{{Key: todo[0].Key, Values: []float32{1, 0}}, {Key: 9999, Values: []float32{1, 1}}}); err != nil {
		t.Fatal(err)
	}
	// A second vector for the same memory and model is passed over.
	if err := s.PutVectors(ctx, "m1", []Vector{{Key: todo[0].Key, Values: []float32{0, 1}}}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Unembedded(ctx, "m1", 0, 10); len(got) != 1 || got[0].Content != "three" {
		t.Errorf("after a vector for one: %+v", got)
	}
	if got, _, _ := s.Unembedded(ctx, "other-model", 0, 10); len(got) != 2 {
		t.Errorf("another model's queue: %+v", got)
	}
	var n int
	var blob []byte
	if err := s.db.QueryRow(`SELECT count(*), max(vec) FROM memory_vectors`).Scan(&n, &blob); err != nil || n != 1 || !bytes.Equal(blob, EncodeVector([]float32{1, 0})) {
		t.Errorf("stored %d vectors, %x, %v; want the first one only", n, blob, err)
	}
	if err := s.PutVectors(ctx, "m1", []Vector{{Key: todo[1].Key, Values: []float32{float32(math.NaN())}}}); !errors.Is(err, ErrBadVector) {
		t.Errorf("a NaN vector: %v", err)
	}
	hits, err := s.Nearest(ctx, VectorQuery{Model: "m1", Vector: []float32{1, 0}})
	if err != nil || len(hits) != 1 || hits[0].Content != "one" || math.Abs(hits[0].Score-1) > 1e-6 {
		t.Errorf("nearest: %+v, %v", hits, err)
	}
	if _, err := s.Nearest(ctx, VectorQuery{Model: "m1", Vector: []float32{0, 0}}); !errors.Is(err, ErrBadVector) {
		t.Errorf("a zero query: %v", err)
	}
}

// Nearest (vectors kept in memory between searches, rows read for the
// best ones only) gives what the plain reference gives: every vector
// read, every cosine, everything sorted. Checked with many users,
// inactive memories, exact ties (equal vectors), vectors added between
// searches and vectors removed with their memories.
func TestNearestMatchesPlain(t *testing.T) {
	s := openSearchStore(t)
	rng := rand.New(rand.NewPCG(5, 6))
	const dims = 12
	randVec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	shared := randVec() // many memories get exactly this vector: ties
	var ms []Memory
	for i := range 2000 {
		ms = append(ms, Memory{ID: fmt.Sprintf("v%d", i), Category: "personal_fact", Content: fmt.Sprintf("memory %d", i),
			User: []string{"", "u1", "u2", "u3"}[rng.IntN(4)], CreatedAt: time.Unix(int64(rng.IntN(40)), 0), Forgotten: rng.IntN(9) == 0})
	}
	if err := s.Import(ctx, ms); err != nil {
		t.Fatal(err)
	}
	embedAll := func(model string) {
		for {
			todo, _, err := s.Unembedded(ctx, model, 0, 300)
			if err != nil {
				t.Fatal(err)
			}
			if len(todo) == 0 {
				return
			}
			var vs []Vector
			for _, u := range todo {
				v := randVec()
				if rng.IntN(10) == 0 {
					v = shared
				}
				vs = append(vs, Vector{Key: u.Key, Values: v})
			}
			if err := s.PutVectors(ctx, model, vs); err != nil {
				t.Fatal(err)
			}
		}
	}
	checked := 0
	compare := func(stage string) {
		t.Helper()
		for qi, qv := range [][]float32{randVec(), randVec(), shared} {
			for _, user := range []string{"", "u2"} {
				for _, limit := range []int{1, 10, 200} {
					q := VectorQuery{Model: "m", Vector: qv, User: user, Limit: limit}
					got, err := s.Nearest(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					want, err := s.nearestPlain(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Fatalf("%s: query %d user %q limit %d: %d hits, plain %d", stage, qi, user, limit, len(got), len(want))
					}
					for i := range want {
						if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-5 || got[i].Content != want[i].Content || !got[i].CreatedAt.Equal(want[i].CreatedAt) {
							t.Fatalf("%s: query %d user %q limit %d: hit %d is %s %v, plain %s %v", stage, qi, user, limit, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
						}
						checked++
					}
				}
			}
		}
	}
	embedAll("m")
	embedAll("other") // another model's vectors are never compared
	compare("first")
	// Memories added after the first search: their vectors are read on
	// the next one. Some memories forgotten and superseded meanwhile.
	var more []NewMemory
	for i := range 300 {
		more = append(more, NewMemory{Category: "personal_fact", Content: fmt.Sprintf("later %d", i), User: []string{"", "u2"}[i%2]})
	}
	if _, err := s.Add(ctx, more...); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i += 37 {
		if err := s.Forget(ctx, fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	embedAll("m")
	compare("added")
	// Memories deleted (with their vectors): the copy starts over.
	if _, err := s.db.Exec(`DELETE FROM memories WHERE seq % 5 = 0`); err != nil {
		t.Fatal(err)
	}
	compare("deleted")
	// Most of the best vectors' memories forgotten: the search reads
	// past the first candidates it sorted.
	if _, err := s.db.Exec(`UPDATE memories SET forgotten = 1 WHERE seq % 10 <> 1`); err != nil {
		t.Fatal(err)
	}
	compare("mostly forgotten")
	if checked < 2000 {
		t.Errorf("only %d hits compared", checked)
	}
}

// A database of the schema before vectors is migrated: its memories are
// all waiting for their vectors.
func TestMigrateAddsVectors(t *testing.T) {
	path := databaseAt(t, 4, `INSERT INTO memories (id, category, content, created_s) VALUES ('old1', 'personal_fact', 'Prefers green tea.', 1)`)
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	todo, _, err := s.Unembedded(ctx, "m", 0, 10)
	if err != nil || len(todo) != 1 || todo[0].Content != "Prefers green tea." {
		t.Fatalf("after migrating: %+v, %v", todo, err)
	}
}

// Searches while vectors are written: each search sees a consistent copy
// (run with -race), and once writing stops every vector is found.
func TestNearestWhileWriting(t *testing.T) {
	s := openSearchStore(t)
	var ns []NewMemory
	for i := range 300 {
		ns = append(ns, NewMemory{Category: "personal_fact", Content: fmt.Sprintf("memory %d", i)})
	}
	if _, err := s.Add(ctx, ns...); err != nil {
		t.Fatal(err)
	}
	todo, _, err := s.Unembedded(ctx, "m", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	vec := func(i int) []float32 { return []float32{float32(i + 1), 1, float32(i % 7)} }
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := s.Nearest(ctx, VectorQuery{Model: "m", Vector: []float32{1, 0, 0}, Limit: 5}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < len(todo); i += 10 {
		var vs []Vector
		for j := i; j < i+10; j++ {
			vs = append(vs, Vector{Key: todo[j].Key, Values: vec(j)})
		}
		if err := s.PutVectors(ctx, "m", vs); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range []int{0, 150, 299} {
		hits, err := s.Nearest(ctx, VectorQuery{Model: "m", Vector: vec(j), Limit: 1})
		if err != nil || len(hits) != 1 || hits[0].Content != todo[j].Content {
			t.Errorf("nearest to vector %d: %+v, %v", j, hits, err)
		}
	}
}
