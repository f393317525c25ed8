package md

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Cache keeps what scopes rendered to, so that rendering a tree again that
// reuses some of the same *Scope values (a caller that keeps the nodes of
// unchanged inputs, such as files that did not change) copies their bytes
// and report records instead of walking them again. A budgeted render's
// passes reuse a scope rendered with the same scopes inside it dropped, as
// the same search over an unchanged tree renders them again.
//
// A scope is looked up by its pointer and the context it is rendered in (the
// separator it inherits, whether it is inside XML, its depth, whether it
// starts a line), so a cached
// scope must not be changed after it was first rendered: nodes are values
// that are built, not edited, and a caller that reuses one promises that.
// Entries no render asked for since the previous render are dropped, so the
// cache holds about one prompt. A Cache is safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	// The map is keyed by the scope alone, which hashes fast; the few
	// contexts one scope is rendered in are told apart within its slot.
	// Each slot notes the last render that used it, so a render that
	// finds what it needs changes nothing in the map; slots two renders
	// old go when the map has grown past twice what a render uses.
	m    map[*Scope]*slot
	gen  uint64
	used int // slots the current render used
	last int // slots the last render used
	// recsHint is how many records the last render without a plan made,
	// to size the next one's.
	recsHint atomic.Int64
	// textHint is the length of the last text rendered with nothing
	// dropped, to size the next one's buffer.
	textHint atomic.Int64
	// scopesHint is how many scopes the last budget's walk found.
	scopesHint atomic.Int64
	// order is the last budget's plan order, and prios the priority of
	// each of its scopes (noPriority for those without one), which decide
	// it: a tree whose scopes have the same priorities has the same order
	// (see newPlan).
	order []int
	prios []int
}

// noPriority stands for a scope without a priority in Cache.prios.
const noPriority = math.MinInt

// sortedOrder returns the last order kept, if its scopes had the
// priorities scopes have. The slice is shared and must not be changed.
func (c *Cache) sortedOrder(scopes []scopeInfo) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.prios) != len(scopes) {
		return nil
	}
	for i := range scopes {
		si := &scopes[i]
		if want := c.prios[i]; si.prioritized && si.priority != want || !si.prioritized && want != noPriority {
			return nil
		}
	}
	return c.order
}

// keepOrder keeps order, sorted from scopes' priorities.
func (c *Cache) keepOrder(scopes []scopeInfo, order []int) {
	prios := make([]int, len(scopes))
	for i := range scopes {
		prios[i] = noPriority
		if scopes[i].prioritized {
			prios[i] = scopes[i].priority
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order, c.prios = order, prios
}

type slot struct {
	gen     uint64
	entries []entry
	// plan is what a budget's walk found in the scope (see newPlan).
	plan []scopeInfo
	// notices counts the scope's notice by the number dropped.
	notices map[int]int
	// first holds the first entry, so that a scope rendered in one
	// context, as most are, costs one allocation in the map.
	first [1]entry
}

// entry is one rendering of a scope: in a context, with the scopes inside
// it that the pass dropped (by plan index from the scope's, nil for none).
type entry struct {
	key   cacheKey
	drops []bool
	sum   uint64 // dropsSum(drops)
	val   *cached
	gen   uint64 // the last render that used it
}

// find returns the entry for context k and drops, whose sum is sum. The
// sums tell most entries apart at once: a budget's search renders the
// scope holding 20,000 memories with dozens of drop patterns, each as long
// as it has memories and differing from the others at one or two of them.
func (s *slot) find(k cacheKey, drops []bool, sum uint64) *entry {
	for i := range s.entries {
		if e := &s.entries[i]; e.key == k && e.sum == sum && slices.Equal(e.drops, drops) {
			return e
		}
	}
	return nil
}

// dropsSeed seeds dropsSum. Sums only tell entries apart faster (equal
// sums are compared byte for byte), so a seed per process is no harm to
// determinism.
var dropsSeed = sync.OnceValue(maphash.MakeSeed)

// dropsSum hashes a drop pattern, 64 scopes to a word; none has sum 0.
func dropsSum(drops []bool) uint64 {
	if len(drops) == 0 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(dropsSeed())
	// The bits go into the hash 64 scopes to a word, the words 32 at a
	// time: a memory store's pattern is thousands of scopes long, and
	// the search looks patterns up several times a pass.
	var words [32 * 8]byte
	n := 0
	for i := 0; i < len(drops); i += 64 {
		binary.LittleEndian.PutUint64(words[n:], packBits(drops[i:min(i+64, len(drops))]))
		if n += 8; n == len(words) {
			h.Write(words[:])
			n = 0
		}
	}
	h.Write(words[:n])
	return h.Sum64()
}

// packBits returns the bits of up to 64 bools, the first lowest. Eight
// at a time, without branches: a pattern of mixed drops would mispredict
// half of them.
func packBits(d []bool) uint64 {
	var w uint64
	j := 0
	for ; j+8 <= len(d); j += 8 {
		e := d[j : j+8 : j+8]
		b := bit(e[0]) | bit(e[1])<<1 | bit(e[2])<<2 | bit(e[3])<<3 |
			bit(e[4])<<4 | bit(e[5])<<5 | bit(e[6])<<6 | bit(e[7])<<7
		w |= b << j
	}
	for ; j < len(d); j++ {
		w |= bit(d[j]) << j
	}
	return w
}

// bit is 1 for true, 0 for false.
func bit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[*Scope]*slot{}, gen: 1} }

// WithCache makes the renderer reuse and fill c (see [Cache]).
func WithCache(c *Cache) Option { return func(r *Renderer) { r.cache = c } }

type cacheKey struct {
	s     *Scope
	sep   string
	inXML bool
	depth int
	// lineStart is whether the scope starts a line: a list at its start
	// starts a new line when it does not.
	lineStart bool
}

type cached struct {
	text string
	// recs are the scope's own record first, then those inside it, each
	// with its plan index counted from the scope's.
	recs []rec
	// src, when recs is nil, are those records as a pass without a plan
	// made them (its own, which nothing writes again), placed from base:
	// the first get makes recs of them, so that a scope rendered again
	// and again (one changed part in a large one) is not copied each time
	// for a reuse that may never come.
	src     []rec
	base    int
	kept    int // prioritised scopes rendered, for sections around it
	dropped int // scopes dropped inside it, for notices around it
	// track is what a tracking pass saw of the lists inside, or nil.
	track *trackFragment
}

func (c *Cache) get(k cacheKey, drops []bool) *cached {
	sum := dropsSum(drops) // outside the lock: a pattern may be 20,000 long
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.m[k.s]
	if sl == nil || sl.gen+1 < c.gen {
		return nil
	}
	e := sl.find(k, drops, sum)
	if e == nil {
		return nil
	}
	e.gen = c.gen
	c.touch(sl)
	if v := e.val; v.recs == nil && v.src != nil {
		v.recs = relocate(v.src, v.base)
		v.src = nil
	}
	return e.val
}

// relocate copies records a pass without a plan made for a scope that
// began at base, with places counted from base and plan indexes from the
// scope's (every scope inside renders a record).
func relocate(src []rec, base int) []rec {
	recs := make([]rec, len(src))
	copy(recs, src)
	for j := range recs {
		recs[j].at -= base
		recs[j].idx = int32(j)
	}
	return recs
}

// touch marks sl used by the current render. The caller holds c.mu.
func (c *Cache) touch(sl *slot) {
	if sl.gen != c.gen {
		sl.gen = c.gen
		c.used++
	}
}

// put keeps v as what the scope rendered to in context k with the given
// drops inside it, which it copies. Renderings of the scope that the last
// two renders did not use go.
func (c *Cache) put(k cacheKey, drops []bool, v *cached) {
	sum := dropsSum(drops) // outside the lock: a pattern may be 20,000 long
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.slot(k.s)
	if e := sl.find(k, drops, sum); e != nil {
		e.val, e.gen = v, c.gen
		return
	}
	sl.entries = slices.DeleteFunc(sl.entries, func(e entry) bool { return e.gen+1 < c.gen })
	sl.entries = append(sl.entries, entry{key: k, drops: slices.Clone(drops), sum: sum, val: v, gen: c.gen})
}

// slot returns s's slot, made afresh when there is none or it is two
// renders old, marked used by the current render. The caller holds c.mu.
func (c *Cache) slot(s *Scope) *slot {
	sl := c.m[s]
	if sl == nil || sl.gen+1 < c.gen {
		sl = &slot{}
		sl.entries = sl.first[:0]
		c.m[s] = sl
	}
	c.touch(sl)
	return sl
}

// sweep starts a new generation: what the last two renders did not use
// may go.
func (c *Cache) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.used = c.used, 0
	c.gen++
	if len(c.m) > 2*c.last+64 {
		for s, sl := range c.m {
			if sl.gen+1 < c.gen {
				delete(c.m, s)
			}
		}
	}
}

// subplan returns the walk of s kept by an earlier budgeted render, or nil.
func (c *Cache) subplan(s *Scope) []scopeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.m[s]
	if sl == nil || sl.gen+1 < c.gen || sl.plan == nil {
		return nil
	}
	c.touch(sl)
	return sl.plan
}

// putSubplan keeps the walk of s.
func (c *Cache) putSubplan(s *Scope, plan []scopeInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slot(s).plan = plan
}

// notice returns the count of s's notice for k scopes dropped, if kept.
func (c *Cache) notice(s *Scope, k int) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.m[s]
	if sl == nil || sl.gen+1 < c.gen {
		return 0, false
	}
	n, ok := sl.notices[k]
	if ok {
		c.touch(sl)
	}
	return n, ok
}

// putNotice keeps the count of s's notice for k scopes dropped. A few
// counts are kept per scope.
func (c *Cache) putNotice(s *Scope, k, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.slot(s)
	if sl.notices == nil || len(sl.notices) >= 64 {
		sl.notices = map[int]int{}
	}
	sl.notices[k] = n
}
