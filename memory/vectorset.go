package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// VectorSet is a store's copy of one model's vectors in memory, scaled to
// length 1 and laid end to end, for an exact cosine search in Go that
// reads no vector from the database ([VectorSet.Nearest]). It is appended
// to only, so a copy of it stays valid while the original grows: a store
// keeps one under its lock and hands copies to searches.
type VectorSet struct {
	// dims is the length of the vectors (the first one's); vectors of
	// another length are left out, as no query can match both.
	dims int
	// vals holds vector i at vals[i*dims:(i+1)*dims], of the memory
	// keys[i] of scope users[i].
	vals  []float32
	keys  []int64
	users []string
}

// Len is the number of vectors in the set.
func (v VectorSet) Len() int { return len(v.keys) }

// AddEncoded adds the vector of the memory keyed key, of user's scope, as
// [EncodeVector] wrote it. A vector of another length than the set's, or
// with no direction, is left out.
func (v *VectorSet) AddEncoded(key int64, user string, blob []byte) error {
	vec, err := DecodeVector(blob)
	if err != nil {
		return fmt.Errorf("vector of memory %d: %w", key, err)
	}
	if v.dims == 0 {
		v.dims = len(vec)
	}
	if u := unit(vec); u != nil && len(u) == v.dims {
		v.vals = append(v.vals, u...)
		v.keys = append(v.keys, key)
		v.users = append(v.users, user)
	}
	return nil
}

// scored is a vector's cosine to a query.
type scored struct {
	score float32
	key   int64
}

// bestFirst orders scored vectors best first, the later written first
// among equal scores.
func bestFirst(a, b scored) int {
	if a.score != b.score {
		if a.score > b.score {
			return -1
		}
		return 1
	}
	return cmp.Compare(b.key, a.key)
}

// ActiveRows reads the active memories among keys, each with its key
// (Candidate.Vector unset), in any order.
type ActiveRows func(ctx context.Context, keys []int64) ([]Candidate, error)

// Nearest ranks the set's vectors of q.User's scope by cosine to
// q.Vector: every cosine is computed; the best ones are sorted, their
// rows read with read, and those no longer active passed over. It gives
// what [NearestPlain] gives over the same vectors and memories (to about
// 1e-6 in the scores, which are summed in float32).
func (v VectorSet) Nearest(ctx context.Context, q VectorQuery, read ActiveRows) ([]Hit, error) {
	qv := unit(q.Vector)
	if qv == nil {
		return nil, fmt.Errorf("%w: the query vector has no direction", ErrBadVector)
	}
	if v.dims != len(qv) {
		return nil, nil
	}
	all := make([]scored, 0, len(v.keys))
	for i, u := range v.users {
		if u == "" || u == q.User {
			all = append(all, scored{dot32(v.vals[i*v.dims:(i+1)*v.dims], qv), v.keys[i]})
		}
	}
	limit := q.limit()
	// Most searches need only the best few: those are sorted; all of
	// them only when too many of the best are no longer active.
	var hits []Hit
	for _, n := range []int{2*limit + 16, len(all)} {
		var err error
		hits, err = readBest(ctx, best(all, n), limit, read)
		if err != nil || len(hits) >= limit || n >= len(all) {
			return hits, err
		}
	}
	return hits, nil
}

// best returns, best first, the n best of all and every other one tied
// with the n-th.
func best(all []scored, n int) []scored {
	if n >= len(all) {
		out := slices.Clone(all)
		slices.SortFunc(out, bestFirst)
		return out
	}
	// The n-th best score, from a min-heap of the n best so far.
	h := make([]float32, 0, n)
	for _, c := range all {
		switch {
		case len(h) < n:
			h = append(h, c.score)
			for i := len(h) - 1; i > 0 && h[(i-1)/2] > h[i]; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case c.score > h[0]:
			h[0] = c.score
			for i := 0; ; {
				l, m := 2*i+1, i
				if l < n && h[l] < h[m] {
					m = l
				}
				if l+1 < n && h[l+1] < h[m] {
					m = l + 1
				}
				if m == i {
					break
				}
				h[i], h[m] = h[m], h[i]
				i = m
			}
		}
	}
	out := make([]scored, 0, n+8)
	for _, c := range all {
		if c.score >= h[0] {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, bestFirst)
	return out
}

// readBest reads the rows of cand (best first) a chunk at a time and
// returns the best limit active ones. A chunk ends past a tie, so that
// equal scores are ordered among themselves by recency, as compareHits
// orders them.
func readBest(ctx context.Context, cand []scored, limit int, read ActiveRows) ([]Hit, error) {
	var hits []Hit
	for i := 0; i < len(cand) && len(hits) < limit; {
		j := min(i+limit-len(hits)+8, len(cand))
		for j < len(cand) && cand[j].score == cand[j-1].score {
			j++
		}
		scores := make(map[int64]float32, j-i)
		keys := make([]int64, 0, j-i)
		for _, c := range cand[i:j] {
			scores[c.key] = c.score
			keys = append(keys, c.key)
		}
		found, err := read(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, c := range found {
			hits = append(hits, Hit{Memory: c.Memory, Score: float64(scores[c.Key]), seq: c.Key})
		}
		i = j
	}
	slices.SortStableFunc(hits, compareHits)
	return hits[:min(limit, len(hits))], nil
}

// dot32 is the dot product of two vectors of one length in float32, four
// sums at a time: the cosine of two unit vectors to about 1e-6, which is
// what ranking needs, at a quarter of the float64 loop's time.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
