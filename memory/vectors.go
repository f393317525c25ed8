package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// VectorStore is a [Store] that keeps an embedding vector beside each
// memory (memory.embeddings) and finds the memories nearest to a vector.
// Vectors are written after their memories, by a worker (package
// embedding), so a memory write never waits for an embedding endpoint;
// the memories still without a vector are the worker's queue, kept in
// the store itself, so nothing queued is lost when a process stops.
//
// model names the vectors' space: vectors of different models are never
// compared.
type VectorStore interface {
	// Unembedded returns, oldest first, up to limit active memories
	// written after the one keyed after (0: from the first) that have no
	// vector for model, and the key up to which it looked: the last
	// one's when it found limit, else the newest memory's, so that a
	// caller that found nothing does not look through the same memories
	// again.
	Unembedded(ctx context.Context, model string, after int64, limit int) (todo []Unembedded, last int64, err error)
	// PutVectors stores vectors for model. A vector for a memory that
	// has one already, or that no longer exists, is passed over.
	PutVectors(ctx context.Context, model string, vs []Vector) error
	// Nearest returns the active memories of q.User's scope whose
	// vectors for q.Model are nearest to q.Vector by cosine, best first
	// (Score is the cosine), at most q.Limit.
	Nearest(ctx context.Context, q VectorQuery) ([]Hit, error)
}

// Unembedded is a memory that waits for its vector. Key is the store's
// own number of it, which grows with every memory written.
type Unembedded struct {
	Key     int64
	Content string
}

// Vector is the embedding of the memory keyed Key.
type Vector struct {
	Key    int64
	Values []float32
}

// VectorQuery asks for the memories nearest to a vector.
type VectorQuery struct {
	Model  string
	Vector []float32
	User   string
	Limit  int
}

func (q VectorQuery) limit() int { return SearchQuery{Limit: q.Limit}.limit() }

// ErrBadVector is wrapped by errors about a vector that cannot be stored
// or compared: empty, holding NaN or an infinity, or of zero length.
var ErrBadVector = errors.New("bad vector")

// CheckVector returns an error wrapping [ErrBadVector] when v is empty,
// holds a value that is not finite, or is all zeros (it has no direction,
// so no cosine).
func CheckVector(v []float32) error {
	if len(v) == 0 {
		return fmt.Errorf("%w: no values", ErrBadVector)
	}
	zero := true
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: value %d is %v", ErrBadVector, i, x)
		}
		if x != 0 {
			zero = false
		}
	}
	if zero {
		return fmt.Errorf("%w: all %d values are 0", ErrBadVector, len(v))
	}
	return nil
}

// EncodeVector is v as stored: 4 bytes per value, little-endian IEEE 754
// float32.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector reads a vector written by EncodeVector.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not a whole number of float32 values", ErrBadVector, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// Cosine is the cosine of the angle between a and b, computed in float64;
// 0 when their lengths differ or either has no direction. It is the plain
// definition the stores' faster searches are tested against.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// unit is v scaled to length 1, in float32 like v (nil when v has no
// direction): the cosine of two unit vectors is their dot product.
func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return nil
	}
	inv := 1 / math.Sqrt(n)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// Candidate is a memory with its vector, for [NearestPlain]; Key is the
// store's number of the memory, the last tie-break (later first).
type Candidate struct {
	Memory
	Key    int64
	Vector []float32
}

// NearestPlain ranks memories by cosine to q.Vector in the plainest way:
// every candidate's cosine, all of them sorted (score, then newer, then
// later written). Stores without a faster search use it, and the tests
// hold the faster ones to it. Memories outside q.User's scope, inactive
// ones and vectors of another length are passed over.
func NearestPlain(q VectorQuery, cs []Candidate) []Hit {
	var hits []Hit
	for _, c := range cs {
		m := c.Memory
		if m.SupersededBy != "" || m.Forgotten || (m.User != "" && m.User != q.User) || len(c.Vector) != len(q.Vector) {
			continue
		}
		hits = append(hits, Hit{Memory: m, Score: Cosine(q.Vector, c.Vector), seq: c.Key})
	}
	slices.SortStableFunc(hits, compareHits)
	return hits[:min(len(hits), q.limit())]
}
