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
// can. A long text for an exact encoding is counted by chunks, each cached
// on its own, so an edit recounts only the chunks it touched.
func (cc *cachedCounter) Count(text string) int {
	if text == "" {
		return cc.inner.Count(text)
	}
	_, exact := cc.inner.(*bpe)
	return cc.cached(text, exact && len(text) >= splitAt)
}

// cached is the count of text from the cache, or counted (by chunks when
// chunked) and stored.
func (cc *cachedCounter) cached(text string, chunked bool) int {
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
	if chunked {
		n = cc.countChunks(text)
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
// in chunks, each chunk through the cache.
const splitAt = 1024

// Chunks are cut where the line before the cut says so (see chunkEnd), so
// that the cuts depend on the text near them and not on where the text
// starts: two prompts that share a stretch of text share its chunks, and an
// edit changes only the chunks around it. A chunk is at least minChunk
// bytes, and is cut at the first cut allowed after maxChunk bytes.
const (
	minChunk = 96
	maxChunk = 4096
)

// countChunks counts a long text as the sum of its chunks, each counted
// (and remembered) on its own. A prompt that differs from the last one by a
// dropped scope or an edited file then costs a count of the chunks that
// changed, not of the whole text. The sum is exact: it cuts only where the
// byte-pair encodings' pre-tokenizer always ends a piece (see [cutAt]), so
// no token can span two chunks.
func (cc *cachedCounter) countChunks(text string) int {
	n, start, line := 0, 0, 0
	for {
		k := strings.IndexByte(text[line:], '\n')
		if k < 0 {
			break
		}
		i := line + k + 1
		mid := text[line+k/2]
		line = i
		if i >= len(text) {
			break
		}
		size := i - start
		if size < minChunk || (size < maxChunk && !chunkEnd(k, mid)) || !cutAt(text, i) {
			continue
		}
		n += cc.countFlat(text[start:i])
		start = i
	}
	if start == 0 {
		return cc.inner.Count(text)
	}
	return n + cc.countFlat(text[start:])
}

// chunkEnd decides, from the length of the line just ended and its middle
// byte, whether a chunk may end after it: about one line in eight.
func chunkEnd(lineLen int, mid byte) bool {
	h := uint32(lineLen)*0x9E3779B1 ^ uint32(mid)*0x85EBCA77
	h ^= h >> 15
	h *= 0x2C1B3C6D
	return h>>29 == 0
}

// countFlat is Count for one chunk: from the cache, or counted whole.
func (cc *cachedCounter) countFlat(text string) int { return cc.cached(text, false) }

// AddsAt reports whether Count(text) equals Count(text[:i]) +
// Count(text[i:]) by the rule of [AddsAt], for the exact encodings; the
// estimate's counts never add up exactly, so for it the answer is false.
func (cc *cachedCounter) AddsAt(text string, i int) bool {
	if _, exact := cc.inner.(*bpe); !exact {
		return false
	}
	return cutAt(text, i)
}

// AddsAt reports whether Count(text) equals Count(text[:i]) +
// Count(text[i:]), by the rule of the package-level [AddsAt].
func (b *bpe) AddsAt(text string, i int) bool { return cutAt(text, i) }

// AddsAt reports whether cutting text before byte i keeps the exact
// encodings' counts additive: Count(text) == Count(text[:i]) +
// Count(text[i:]). It decides from text[i-1] and the bytes from i up to the
// first one that is neither a space nor a tab, all of which must be inside
// text, so the answer holds for any text those bytes appear in: a caller
// that knows the counts of two texts that meet at such a cut knows the
// count of their join.
func AddsAt(text string, i int) bool { return cutAt(text, i) }

// cutAt is the rule: text[i-1] is a newline, and what follows is a run of
// spaces or tabs (possibly empty) and then an ASCII byte that is not white
// space; and text[i] is not "/". In o200k_base and cl100k_base a newline
// ends every piece that holds it, except that the newline-run piece takes
// in white space up to the last newline of the run (so no newline may
// follow within the run), and that o200k_base lets the punctuation piece,
// which swallows trailing newlines, run on into a "/". A piece that starts
// at i is then the same whether or not anything comes before i, since the
// pre-tokenizer looks behind nothing. Multi-byte characters are never the
// deciding byte: some of them are white space.
func cutAt(text string, i int) bool {
	if i <= 0 || i >= len(text) || text[i-1] != '\n' || text[i] == '/' {
		return false
	}
	j := i
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	if j == len(text) {
		return false
	}
	switch c := text[j]; c {
	case '\n', '\r', '\v', '\f':
		return false
	default:
		return c < 0x80
	}
}
