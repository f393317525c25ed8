package md

import (
	"cmp"
	"math"
	"slices"
)

// plan is the set of scopes in a tree, in render order, and which of them
// the current pass drops or cuts.
type plan struct {
	scopes    []scopeInfo
	index     map[*Scope]int // first index of each scope; nil until needed
	order     []int          // prioritised scopes, first to drop first
	drop      []bool
	trunc     map[int]int // scope → token limit for this pass
	cut       int         // scopes the current cut drops directly
	cutAt     int         // final cut when a scope was truncated, else -1
	truncated int         // that scope, else -1
	// addBack is the size of the prompt with the last dropped scope kept,
	// which proves the kept set maximal; -1 when unknown.
	addBack int
	// need maps a dropped scope to the size the prompt would have with it
	// kept, for those the search rendered; nil when there was no fill.
	need map[int]int
	// atLeast marks the scopes in need whose size is a floor: worked out
	// by a probe, not a pass (see prober).
	atLeast map[int]bool
	// untried marks the dropped scopes that a fill that ran out of rounds
	// did not try, though by their counts they might have fit; nil when
	// none is left so (see fill).
	untried []bool
	// prioBefore[i] counts the prioritised scopes before scope i.
	prioBefore []int
	cache      *Cache // where walks of large scopes are kept; may be nil
	notices    []int  // scopes with a notice
	insteads   bool   // some scope has an Instead
	// notes counts notices by scope and number dropped, without a cache.
	notes map[[2]int]int
	// lastRecs is how many records the last pass made, to size the next's.
	lastRecs int
}

// static reports whether the text of kept scope idx cannot depend on the
// plan: no prioritised scope inside it, and no cut asked of it.
func (p *plan) static(idx int) bool {
	end := idx + p.scopes[idx].size + 1
	if p.prioBefore[end]-p.prioBefore[idx+1] > 0 {
		return false
	}
	_, cut := p.trunc[idx]
	return !cut
}

// uncut reports whether no cut is asked of kept scope idx or of anything
// inside it in the current pass.
func (p *plan) uncut(idx int) bool {
	end := idx + p.scopes[idx].size
	for t := range p.trunc {
		if t >= idx && t <= end {
			return false
		}
	}
	return true
}

// dropsIn returns which of the scopes inside idx the current pass drops,
// by index from idx+1, or nil when it drops none of them. The slice is the
// plan's own.
func (p *plan) dropsIn(idx int) []bool {
	if p.static(idx) {
		return nil // nothing inside it can be dropped
	}
	d := p.drop[idx+1 : idx+p.scopes[idx].size+1]
	if !slices.Contains(d, true) {
		return nil
	}
	return d
}

// last returns the last scope the current cut drops directly, or -1.
func (p *plan) last() int {
	for i := len(p.order) - 1; i >= 0; i-- {
		if p.drop[p.order[i]] {
			return p.order[i]
		}
	}
	return -1
}

// scopeInfo is a scope's place in the plan, with what the search reads of
// it copied in, so that the search does not go to each scope's memory.
type scopeInfo struct {
	s           *Scope
	parent      int
	size        int // scopes inside it
	priority    int
	prioritized bool
	instead     bool // s.Instead is set: a pass that drops s need not look at it
	notice      bool // s.Notice is set
}

// newPlan walks the tree. With a cache, a large scope walked by an earlier
// render is copied from what that walk found (see [Cache]: a cached scope
// does not change).
func newPlan(n Node, c *Cache) *plan {
	p := &plan{cutAt: -1, truncated: -1, addBack: -1, cache: c}
	if c != nil {
		p.scopes = make([]scopeInfo, 0, c.scopesHint.Load())
	}
	p.walk(n, -1)
	if c != nil {
		c.scopesHint.Store(int64(len(p.scopes)))
	}
	p.drop = make([]bool, len(p.scopes))
	p.prioBefore = make([]int, len(p.scopes)+1)
	for i := range p.scopes {
		si := &p.scopes[i]
		p.prioBefore[i+1] = p.prioBefore[i]
		if si.prioritized {
			p.prioBefore[i+1]++
		}
		if si.notice {
			p.notices = append(p.notices, i)
		}
		p.insteads = p.insteads || si.instead
	}
	// A tree rendered again mostly has the priorities it had.
	if c != nil {
		if order := c.sortedOrder(p.scopes); order != nil {
			p.order = order
			return p
		}
	}
	// Listed from the last scope to the first, so that the usual tree, whose
	// entries rank lower the later they come, is close to sorted already.
	p.order = make([]int, 0, p.prioBefore[len(p.scopes)])
	for i := len(p.scopes) - 1; i >= 0; i-- {
		if p.scopes[i].prioritized {
			p.order = append(p.order, i)
		}
	}
	// Lowest priority first, the later of two equal ones first: a total
	// order (no two scopes share an index), so no stable sort is needed.
	slices.SortFunc(p.order, func(a, b int) int {
		if pa, pb := p.scopes[a].priority, p.scopes[b].priority; pa != pb {
			return cmp.Compare(pa, pb)
		}
		return cmp.Compare(b, a)
	})
	if c != nil {
		c.keepOrder(p.scopes, p.order)
	}
	return p
}

// subplanMin is the number of scopes inside a scope from which its walk is
// kept in the cache.
const subplanMin = 64

// walk adds the scopes in n, in the order the renderer meets them
// (see [Children]), with parent as the index of the scope around n.
func (p *plan) walk(n Node, parent int) {
	s, ok := n.(*Scope)
	if !ok {
		for c := range Children(n) {
			p.walk(c, parent)
		}
		return
	}
	if s == nil {
		return
	}
	idx := len(p.scopes)
	if p.cache != nil {
		if sub := p.cache.subplan(s); sub != nil {
			p.scopes = append(p.scopes, sub...)
			p.scopes[idx].parent = parent
			for j := idx + 1; j < len(p.scopes); j++ {
				p.scopes[j].parent += idx
			}
			return
		}
	}
	p.scopes = append(p.scopes, scopeInfo{s: s, parent: parent, priority: s.Priority, prioritized: s.Prioritized, instead: s.Instead != nil, notice: s.Notice != nil})
	for _, c := range s.Children {
		p.walk(c, idx)
	}
	size := len(p.scopes) - idx - 1
	p.scopes[idx].size = size
	if p.cache != nil && size >= subplanMin {
		// Kept with parents counted from the scope, which has none.
		sub := slices.Clone(p.scopes[idx:])
		sub[0].parent = -1
		for j := 1; j < len(sub); j++ {
			sub[j].parent -= idx
		}
		p.cache.putSubplan(s, sub)
	}
}

// indexOf finds s, trying the expected position first.
func (p *plan) indexOf(s *Scope, next int) int {
	if next < len(p.scopes) && p.scopes[next].s == s {
		return next
	}
	if p.index == nil {
		// Built on the first miss: a render finds its scopes in order, and
		// a large tree's map would cost more than the whole search.
		p.index = make(map[*Scope]int, len(p.scopes))
		for i, si := range p.scopes {
			if _, seen := p.index[si.s]; !seen {
				p.index[si.s] = i
			}
		}
	}
	if i, ok := p.index[s]; ok {
		return i
	}
	return -1
}

func (p *plan) isDropped(idx int) bool { return idx >= 0 && p.drop[idx] }

func (p *plan) setCut(k int) {
	p.cut = k
	clear(p.drop)
	for _, idx := range p.order[:k] {
		p.drop[idx] = true
	}
}

// covered reports whether a scope around d is dropped.
func (p *plan) covered(d int) bool {
	for a := p.scopes[d].parent; a >= 0; a = p.scopes[a].parent {
		if p.drop[a] {
			return true
		}
	}
	return false
}

// ownCost is what keeping d adds, by the costs, while the scopes inside it
// that are dropped stay dropped.
func (p *plan) ownCost(d int, cost []int) int {
	n := cost[d]
	end := d + p.scopes[d].size
	for e := d + 1; e <= end; e++ {
		if !p.drop[e] {
			continue
		}
		inner := false
		for a := p.scopes[e].parent; a > d; a = p.scopes[a].parent {
			if p.drop[a] {
				inner = true
				break
			}
		}
		if !inner {
			n -= cost[e]
		}
	}
	return max(n, 0)
}

// freedMemo tells what dropping a scope put into the text that keeping it
// would take out again, for the plan's current drops: the scope's Instead,
// and the notice of each scope around it that counts it among its dropped.
// A scope's own cost less this bounds what keeping it adds from below.
type freedMemo struct {
	p *plan
	c Counter
	// notice maps a scope with a notice to what keeping one more of the
	// scopes dropped inside it takes out of its notice.
	notice map[int]int
}

func (p *plan) newFreed(c Counter) *freedMemo {
	return &freedMemo{p: p, c: c, notice: map[int]int{}}
}

// of returns how many tokens keeping dropped scope d takes out, at most:
// each text counted with room for the separator that goes with it.
func (f *freedMemo) of(d int) int {
	p := f.p
	n := 0
	if p.scopes[d].instead {
		n += f.c.Count(String(p.scopes[d].s.Instead)) + 2
	}
	for a := p.scopes[d].parent; a >= 0; a = p.scopes[a].parent {
		if !p.scopes[a].notice {
			continue
		}
		saved, ok := f.notice[a]
		if !ok {
			saved = f.noticeSaving(a)
			f.notice[a] = saved
		}
		n += saved
	}
	return n
}

// most returns the most that keeping any one dropped scope can take out,
// or a very large number when a scope has an Instead (whose text is not
// worked out for every scope).
func (f *freedMemo) most() int {
	p := f.p
	if p.insteads {
		return math.MaxInt / 4
	}
	n := 0
	for _, a := range p.notices {
		saved, ok := f.notice[a]
		if !ok {
			saved = f.noticeSaving(a)
			f.notice[a] = saved
		}
		n += saved
	}
	return n
}

// noticeSaving is what keeping one more of the scopes dropped inside a
// takes out of a's notice: all of it when it counts one, else the
// difference between its counts of k and k-1.
func (f *freedMemo) noticeSaving(a int) int {
	p := f.p
	k := 0
	end := a + p.scopes[a].size
	for e := a + 1; e <= end; e++ {
		if p.drop[e] {
			k++
			e += p.scopes[e].size
		}
	}
	switch {
	case k == 1:
		return p.noticeTokens(a, 1, f.c) + 2 // the notice goes
	case k > 1:
		return max(p.noticeTokens(a, k, f.c)-p.noticeTokens(a, k-1, f.c), 0)
	}
	return 0
}

// noticeTokens counts scope a's notice for k scopes dropped. A notice is a
// function of k alone (a scope does not change), so its count is kept with
// the scope in the cache, or else in the plan.
func (p *plan) noticeTokens(a, k int, c Counter) int {
	s := p.scopes[a].s
	if p.cache != nil {
		if n, ok := p.cache.notice(s, k); ok {
			return n
		}
	} else if n, ok := p.notes[[2]int{a, k}]; ok {
		return n
	}
	n := c.Count(String(s.Notice(k)))
	if p.cache != nil {
		p.cache.putNotice(s, k, n)
	} else {
		if p.notes == nil {
			p.notes = map[[2]int]int{}
		}
		p.notes[[2]int{a, k}] = n
	}
	return n
}

// ancestorDropped reports whether a scope around idx is among the first k
// scopes of the drop order.
func (p *plan) ancestorDropped(idx, k int) bool {
	inFirst := make(map[int]bool, k)
	for _, o := range p.order[:k] {
		inFirst[o] = true
	}
	for a := p.scopes[idx].parent; a >= 0; a = p.scopes[a].parent {
		if inFirst[a] {
			return true
		}
	}
	return false
}

// savings returns, for each cut k, how many tokens dropping the first k
// scopes of the drop order should save, by adding up scope costs; a scope
// inside one already dropped saves nothing more. Each scope also takes
// with it its share of what its parent adds around its children (a list
// marker, an indent, a separator): the parent's count less its children's,
// spread evenly over them, at least one token (the separator) and at most
// maxShare.
func (p *plan) savings(cost []int, share func(idx int) float64) []float64 {
	out := make([]float64, len(p.order)+1)
	saved := make([]float64, len(p.scopes))
	removed := make([]bool, len(p.scopes))
	total := 0.0
	for k, idx := range p.order {
		covered := false
		for a := p.scopes[idx].parent; a >= 0; a = p.scopes[a].parent {
			if removed[a] {
				covered = true
				break
			}
		}
		if !covered {
			gain := float64(cost[idx]) - saved[idx] + share(idx)
			removed[idx] = true
			total += gain
			for a := p.scopes[idx].parent; a >= 0; a = p.scopes[a].parent {
				saved[a] += gain
			}
		}
		out[k+1] = total
	}
	return out
}

// shares returns, for each scope, its share of what its parent adds
// around its children (see savings).
func (p *plan) shares(cost []int) func(idx int) float64 {
	// Children's costs by parent (sums of ints, exact as floats), then, in
	// place, each parent's share: worked out once per parent, as a large
	// tree's scopes have few.
	share := make([]float64, len(p.scopes))
	kids := make([]int, len(p.scopes))
	for i, si := range p.scopes {
		if si.parent >= 0 {
			share[si.parent] += float64(cost[i])
			kids[si.parent]++
		}
	}
	for parent, n := range kids {
		if n > 0 {
			share[parent] = min(max((float64(cost[parent])-share[parent])/float64(n), 1), maxShare)
		}
	}
	return func(idx int) float64 {
		parent := p.scopes[idx].parent
		if parent < 0 {
			return 1
		}
		return share[parent]
	}
}

// maxShare bounds a scope's share of what its parent adds (see savings),
// for a parent with much text of its own beside few children.
const maxShare = 8
