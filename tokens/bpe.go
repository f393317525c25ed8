package tokens

import (
	_ "embed"
	"strings"
	"sync"

	"github.com/loomctx/loom/tokens/internal/ranktable"
)

//go:generate go run ./internal/genranks -out .

// The vocabularies, in the form package ranktable reads in place: nothing
// is decoded or built before the first lookup. genranks writes them from
// tiktoken-go's copies of OpenAI's files.
var (
	//go:embed o200k_base.ranks
	o200kRanks string
	//go:embed cl100k_base.ranks
	cl100kRanks string
)

// The exact counters, shared by the process.
var (
	o200k  = &bpe{name: O200kBase, next: nextO200k, encoded: &o200kRanks}
	cl100k = &bpe{name: Cl100kBase, next: nextCl100k, encoded: &cl100kRanks}

	sharedO200k  = Cached(o200k, DefaultCacheBytes)
	sharedCl100k = Cached(cl100k, DefaultCacheBytes)
)

// bpe counts exactly with one of OpenAI's byte-pair encodings: it splits
// the text into pieces with the encoding's pattern (see split.go), then
// merges the bytes of each piece, lowest rank first, until no pair is in
// the vocabulary. The count is the number of parts left.
type bpe struct {
	name    string
	next    func(text string, i int) int // the end of the piece at text[i]
	encoded *string

	once  sync.Once
	ranks *ranktable.Table
	long  pieceMemo
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
	for i := 0; i < len(text); {
		j := b.next(text, i)
		n += b.countPiece(text[i:j])
		i = j
	}
	return n
}

// load opens the embedded rank table, which costs a header check, and
// fills the character class table the splitters read.
func (b *bpe) load() {
	t, err := ranktable.Open(*b.encoded)
	if err != nil {
		panic("tokens: " + b.name + ".ranks: " + err.Error()) // built by genranks, checked by the tests
	}
	b.ranks = t
	classOnce.Do(loadClasses)
}

// countPiece returns the number of tokens one piece of the split encodes to.
func (b *bpe) countPiece(piece string) int {
	if len(piece) == 1 {
		return 1 // every byte is a token
	}
	if _, ok := b.ranks.Rank(piece); ok {
		return 1
	}
	if len(piece) < memoMinPiece {
		return b.mergeScan(piece)
	}
	if n, ok := b.long.get(piece); ok {
		return n
	}
	var n int
	if len(piece) < heapThreshold {
		n = b.mergeScan(piece)
	} else {
		n = b.mergeHeap(piece)
	}
	b.long.put(piece, n)
	return n
}

// pieceMemo remembers the counts of long pieces that are not tokens: runs
// of spaces that align columns, rules of dashes, unbroken CJK sentences,
// long identifiers. They are a small share of the pieces, but each costs
// dozens of lookups to merge, and the same ones tend to come back, within a
// file and across the files of a prompt. Shorter pieces are about as cheap
// to merge as to look up. gpt-tokenizer keeps a cache of the same kind (of
// every piece).
//
// Pieces longer than memoMaxPiece are not kept, so that a huge piece is
// merged every time and does not crowd out the rest; when the kept pieces
// reach memoMaxBytes the memo starts over.
type pieceMemo struct {
	mu    sync.Mutex
	m     map[string]int
	bytes int
}

const (
	memoMinPiece = 16
	memoMaxPiece = 8 << 10
	memoMaxBytes = 1 << 20
)

// reset forgets every piece; benchmarks use it to measure merging.
func (pm *pieceMemo) reset() {
	pm.mu.Lock()
	pm.m, pm.bytes = nil, 0
	pm.mu.Unlock()
}

func (pm *pieceMemo) get(piece string) (int, bool) {
	if len(piece) > memoMaxPiece {
		return 0, false
	}
	pm.mu.Lock()
	n, ok := pm.m[piece]
	pm.mu.Unlock()
	return n, ok
}

func (pm *pieceMemo) put(piece string, n int) {
	if len(piece) > memoMaxPiece {
		return
	}
	piece = strings.Clone(piece) // do not pin the caller's text
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if pm.m == nil || pm.bytes+len(piece) > memoMaxBytes {
		pm.m, pm.bytes = map[string]int{}, 0
	}
	if _, ok := pm.m[piece]; !ok {
		pm.m[piece] = n
		pm.bytes += len(piece)
	}
}

// heapThreshold is the piece length from which merging keeps its
// candidates in a heap. Below it a linear scan for the lowest rank is
// faster; above it the scan's quadratic cost shows (100 KB of one letter
// is a single piece).
const heapThreshold = 64

const noRank = ranktable.NoRank

// rank returns the rank of piece[i:j], or noRank.
func (b *bpe) rank(piece string, i, j int) uint32 {
	if r, ok := b.ranks.Rank(piece[i:j]); ok {
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
		ranks[i] = int(b.ranks.PairRank(piece[i], piece[i+1]))
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
	sc := heapScratchPool.Get().(*heapScratch)
	defer heapScratchPool.Put(sc)
	sc.grow(n + 1)
	next := sc.next[:n+1] // next[i]: start of the part after the one at i; -1 at the end
	prev := sc.prev[:n+1]
	pairRank := sc.pairRank[:n+1] // rank of merging the part at i with its successor
	for i := range next {
		next[i], prev[i], pairRank[i] = int32(i+1), int32(i-1), noRank
	}
	next[n] = -1
	h := sc.heap[:0]
	defer func() { sc.heap = h[:0] }() // keep what the heap grew to
	for i := 0; i+2 <= n; i++ {
		if r := b.ranks.PairRank(piece[i], piece[i+1]); r != noRank {
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

// heapScratch holds mergeHeap's working slices between calls, so that long
// pieces do not allocate each time.
type heapScratch struct {
	next, prev []int32
	pairRank   []uint32
	heap       candidateHeap
}

var heapScratchPool = sync.Pool{New: func() any { return new(heapScratch) }}

// maxKeptScratch bounds the scratch a pool entry keeps, so that one huge
// piece does not pin its buffers.
const maxKeptScratch = 1 << 20

func (sc *heapScratch) grow(n int) {
	if cap(sc.next) < n || cap(sc.next) > maxKeptScratch && n <= maxKeptScratch {
		sc.next = make([]int32, n)
		sc.prev = make([]int32, n)
		sc.pairRank = make([]uint32, n)
		sc.heap = make(candidateHeap, 0, n)
	}
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
