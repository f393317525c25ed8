package tokens

import (
	"math"
	"sync"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer"
)

// The exact counters, built on first use and shared by the process.
var (
	o200k  = &bpe{name: O200kBase, pattern: o200kPattern}
	cl100k = &bpe{name: Cl100kBase, pattern: cl100kPattern}

	sharedO200k  = Cached(o200k, DefaultCacheBytes)
	sharedCl100k = Cached(cl100k, DefaultCacheBytes)
)

// The split patterns of tiktoken's openai_public.py. tiktoken-go ships the
// same patterns with a code-generated matcher (regexp2cg) that gets some
// whitespace wrong: on "x\n \n" it yields "\n", " \n" where tiktoken yields
// "\n \n", so files with blank lines holding spaces count one token too
// many. Wrapping a pattern in (?:…) changes its text, so regexp2 runs its
// own interpreter on it, which agrees with tiktoken.
const (
	o200kPattern = `(?:[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)`
	cl100kPattern = `(?:(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)`
)

// bpe counts exactly with one of OpenAI's byte-pair encodings: it splits
// the text into pieces with the encoding's pattern, then merges the bytes
// of each piece, lowest rank first, until no pair is in the vocabulary.
// The count is the number of parts left. Nothing is built until the first
// Count: the vocabulary alone is a map of up to 200k entries.
type bpe struct {
	name    string
	pattern string

	once  sync.Once
	split *regexp2.Regexp
	ranks map[string]uint32
}

// Name returns the encoding name, e.g. "o200k_base".
func (b *bpe) Name() string { return b.name }

// Count returns the number of tokens tiktoken's encode_ordinary would
// produce for text.
func (b *bpe) Count(text string) int {
	if text == "" {
		return 0
	}
	b.once.Do(b.load)
	text = valid(text)
	n := 0
	m, err := b.split.FindStringMatch(text)
	for m != nil && err == nil {
		n += b.countPiece(m.String())
		m, err = b.split.FindNextMatch(m)
	}
	if err != nil {
		// regexp2 fails only on a match timeout, and none is set.
		return Estimate{}.Count(text)
	}
	return n
}

// load builds the split pattern and the rank table. The ranks come from
// tiktoken-go's embedded vocabulary, read back token by token through
// Decode, which is the only way the library exposes it.
func (b *bpe) load() {
	b.split = regexp2.MustCompile(b.pattern, regexp2.None)
	codec, err := tokenizer.Get(tokenizer.Encoding(b.name))
	if err != nil {
		panic("tokens: " + b.name + ": " + err.Error()) // the names above are the library's
	}
	ranks := make(map[string]uint32, 200_000)
	misses := 0
	ids := []uint{0}
	for id := uint(0); misses < 1000; id++ {
		ids[0] = id
		tok, err := codec.Decode(ids)
		if err != nil {
			misses++ // ids past the end, and gaps where special tokens sit
			continue
		}
		ranks[tok] = uint32(id)
	}
	b.ranks = ranks
}

// countPiece returns the number of tokens one piece of the split encodes to.
func (b *bpe) countPiece(piece string) int {
	if _, ok := b.ranks[piece]; ok {
		return 1
	}
	if len(piece) < heapThreshold {
		return b.mergeScan(piece)
	}
	return b.mergeHeap(piece)
}

// heapThreshold is the piece length from which merging keeps its
// candidates in a heap. Below it a linear scan for the lowest rank is
// faster; above it the scan's quadratic cost shows (100 KB of one letter
// is a single piece).
const heapThreshold = 64

const noRank = math.MaxUint32

// rank returns the rank of piece[i:j], or noRank.
func (b *bpe) rank(piece string, i, j int) uint32 {
	if r, ok := b.ranks[piece[i:j]]; ok {
		return r
	}
	return noRank
}

// mergeScan merges a short piece. starts holds the byte offset where each
// part begins, plus len(piece); ranks[i] is the rank of parts i and i+1
// merged.
func (b *bpe) mergeScan(piece string) int {
	var startsBuf, ranksBuf [heapThreshold + 1]int
	n := len(piece)
	starts := startsBuf[:n+1]
	ranks := ranksBuf[:n]
	for i := range starts {
		starts[i] = i
	}
	for i := 0; i+1 < n; i++ {
		ranks[i] = int(b.rank(piece, i, i+2))
	}
	ranks[n-1] = noRank
	for len(starts) > 2 {
		best, at := noRank, -1
		for i, r := range ranks[:len(starts)-1] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		// Merge parts at and at+1, then rerank the pairs that touch them.
		starts = append(starts[:at+1], starts[at+2:]...)
		ranks = append(ranks[:at], ranks[at+1:]...)
		parts := len(starts) - 1
		if at+1 < parts {
			ranks[at] = int(b.rank(piece, starts[at], starts[at+2]))
		} else {
			ranks[at] = noRank
		}
		if at > 0 {
			ranks[at-1] = int(b.rank(piece, starts[at-1], starts[at+1]))
		}
	}
	return len(starts) - 1
}

// mergeHeap merges a long piece in O(n log n): the parts form a linked
// list, and the candidate merges sit in a min-heap ordered by rank, then by
// position, so equal ranks merge left to right as in tiktoken. Stale
// candidates are skipped when popped.
func (b *bpe) mergeHeap(piece string) int {
	n := len(piece)
	next := make([]int32, n+1) // next[i]: start of the part after the one at i; -1 at the end
	prev := make([]int32, n+1)
	pairRank := make([]uint32, n+1) // rank of merging the part at i with its successor
	for i := range next {
		next[i], prev[i], pairRank[i] = int32(i+1), int32(i-1), noRank
	}
	next[n] = -1
	h := make(candidateHeap, 0, n)
	for i := 0; i+2 <= n; i++ {
		if r := b.rank(piece, i, i+2); r != noRank {
			pairRank[i] = r
			h = append(h, candidate{r, int32(i)})
		}
	}
	h.init()
	rerank := func(i int32) {
		j := next[i]
		if j < 0 || next[j] < 0 {
			pairRank[i] = noRank
			return
		}
		pairRank[i] = b.rank(piece, int(i), int(next[j]))
		if pairRank[i] != noRank {
			h.push(candidate{pairRank[i], i})
		}
	}
	parts := n
	for len(h) > 0 {
		c := h.pop()
		i := c.at
		if pairRank[i] != c.rank || next[i] < 0 {
			continue // stale: the pair changed since it was pushed
		}
		j := next[i]
		k := next[j]
		next[i] = k
		if k >= 0 {
			prev[k] = i
		}
		pairRank[j] = noRank
		parts--
		rerank(i)
		if p := prev[i]; p >= 0 {
			rerank(p)
		}
	}
	return parts
}

type candidate struct {
	rank uint32
	at   int32
}

// candidateHeap is a binary min-heap, typed so that pushes do not box.
type candidateHeap []candidate

func (h candidateHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].at < h[b].at
}

func (h candidateHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candidateHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *candidateHeap) pop() candidate {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return top
}

func (h candidateHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
