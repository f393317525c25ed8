package tokens

import (
	"hash/maphash"
	"strings"
	"sync"
)

// DefaultCacheBytes is the memory budget of the counters [Get] returns.
const DefaultCacheBytes = 16 << 20

// Cached returns a counter that remembers c's counts by content, using at
// most about maxBytes of memory for what it remembers. Counting text it has
// seen recently costs one hash of the text and one map lookup.
//
// Keys: a text shorter than shortKey bytes is kept as a copy of itself, so
// the lookup is exact and a short substring does not pin the large string
// it was cut from. A longer text is kept as a 128-bit hash (two maphash
// sums with independent random seeds), so remembering a 100 KB memory file
// costs a few dozen bytes; two different texts of the same length would
// have to collide on all 128 bits to be confused.
//
// Eviction: the cache is split into shards by hash, each behind its own
// mutex. A shard holds two generations of entries. New counts go into the
// current one; when it outgrows its half of the shard's budget, the
// previous generation is dropped and the current one takes its place. A hit
// in the previous generation moves the entry forward. This keeps what is
// in use without the bookkeeping of an LRU list.
//
// Two goroutines that miss on the same text at the same time both count it;
// the answer is the same either way.
func Cached(c Counter, maxBytes int) Counter {
	if maxBytes < 0 {
		maxBytes = 0
	}
	cc := &cachedCounter{inner: c, seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	limit := maxBytes / numShards / 2
	for i := range cc.shards {
		cc.shards[i].limit = limit
		cc.shards[i].cur = map[cacheKey]int{}
	}
	return cc
}

const (
	numShards = 16
	shortKey  = 128
	// entryOverhead approximates what a map entry costs beyond the key's
	// own bytes: the key struct, the int, and the map's slack.
	entryOverhead = 64
)

type cacheKey struct {
	h1, h2 uint64
	short  string
}

type cachedCounter struct {
	inner        Counter
	seed1, seed2 maphash.Seed
	shards       [numShards]cacheShard
}

type cacheShard struct {
	mu        sync.Mutex
	cur, prev map[cacheKey]int
	size      int // bytes charged to cur
	limit     int // bytes cur may hold before it becomes prev
}

// Name returns the wrapped counter's encoding name.
func (cc *cachedCounter) Name() string { return NameOf(cc.inner) }

// Count returns the wrapped counter's count for text, from memory when it
// can.
func (cc *cachedCounter) Count(text string) int {
	if text == "" {
		return cc.inner.Count(text)
	}
	h1 := maphash.String(cc.seed1, text)
	key := cacheKey{h1: h1}
	cost := entryOverhead
	if len(text) < shortKey {
		key.short = text
		cost += len(text)
	} else {
		key.h2 = maphash.String(cc.seed2, text)
	}
	s := &cc.shards[h1%numShards]

	s.mu.Lock()
	if n, ok := s.cur[key]; ok {
		s.mu.Unlock()
		return n
	}
	if n, ok := s.prev[key]; ok {
		s.put(key, n, cost)
		s.mu.Unlock()
		return n
	}
	s.mu.Unlock()

	var n int
	if _, exact := cc.inner.(*bpe); exact && len(text) >= splitAt {
		n = cc.countLines(text)
	} else {
		n = cc.inner.Count(text)
	}
	if key.short != "" {
		key.short = strings.Clone(key.short)
	}
	s.mu.Lock()
	s.put(key, n, cost)
	s.mu.Unlock()
	return n
}

// put stores a count in the current generation, turning it into the
// previous one first when it is full. The caller holds s.mu.
func (s *cacheShard) put(key cacheKey, n, cost int) {
	if _, ok := s.cur[key]; ok {
		return
	}
	if cost > s.limit {
		return // too big for even an empty generation
	}
	if s.size+cost > s.limit {
		s.prev, s.cur, s.size = s.cur, make(map[cacheKey]int, len(s.cur)), 0
	}
	s.cur[key] = n
	s.size += cost
}

// splitAt is the length from which a text missing from the cache is counted
// line by line, each line through the cache.
const splitAt = 1024

// countLines counts a long text as the sum of its lines, each counted (and
// remembered) on its own. A prompt that differs from the last one by a
// dropped scope or an edited file then costs a count of the lines that
// changed, not of the whole text. The sum is exact: it cuts only where the
// byte-pair encodings' pre-tokenizer always ends a piece (see [safeCut]), so
// no token can span two parts.
func (cc *cachedCounter) countLines(text string) int {
	n, start := 0, 0
	for i := 1; i < len(text); i++ {
		if text[i-1] == '\n' && safeCut(text[i]) {
			n += cc.Count(text[start:i])
			start = i
		}
	}
	if start == 0 {
		return cc.inner.Count(text)
	}
	return n + cc.Count(text[start:])
}

// safeCut reports whether a text may be cut before c when the byte before
// is a newline. In o200k_base and cl100k_base a newline ends every piece
// that holds it unless more white space follows (the newline run pieces),
// or unless the piece is punctuation followed by newlines, which o200k_base
// lets run on into a "/". Any other byte starts a new piece on both sides
// of the cut. Multi-byte characters are not cut before: some are white
// space.
func safeCut(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '/':
		return false
	}
	return c < 0x80
}
