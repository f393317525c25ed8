package md

import (
	"slices"
	"sort"
	"strings"
)

// listTrack is what a tracking pass (see renderer.track) records of the
// unordered lists it renders where nothing around can rewrite them: each
// item that is a scope of the plan, in document order. A long fill uses it
// to tell what keeping one more item adds without a pass (see prober).
type listTrack struct {
	lists int32
	items []trackedItem
	// other marks the lists that hold an item that is not tracked (text,
	// a nested list): where an item would go back among them is not known.
	other map[int32]bool
	// only, when set, limits what add takes from a fragment to the item
	// of plan index onlyIdx (a pass that wants one item's place), but
	// not inside a scope whose fragment is being recorded (recording >
	// 0), which must be whole.
	only      bool
	onlyIdx   int32
	recording int
}

// trackFragment is what a tracking pass saw of the lists inside one
// scope, with places counted from the scope's start and lists numbered
// from 0, kept with the scope in the cache so that a later tracking pass
// that finds the scope there need not render it again.
type trackFragment struct {
	lists int32
	items []trackedItem
	other []int32
}

// fragment returns what t saw from item from and list lists on, inside a
// scope that began at start and has plan index idx (the items' indexes are
// kept from it: the same scope may have another in a later render).
func (t *listTrack) fragment(from int, lists int32, start, idx int) *trackFragment {
	f := &trackFragment{lists: t.lists - lists, items: slices.Clone(t.items[from:])}
	for i := range f.items {
		it := &f.items[i]
		it.list -= lists
		it.idx -= int32(idx)
		if it.start >= 0 {
			it.start -= start
			it.end -= start
		}
	}
	for id := range t.other {
		if id >= lists {
			f.other = append(f.other, id-lists)
		}
	}
	slices.Sort(f.other)
	return f
}

// add adds what a fragment saw, for its scope written at off with plan
// index idx.
func (t *listTrack) add(f *trackFragment, off, idx int) {
	base := t.lists
	only := t.only && t.recording == 0
	if !only {
		t.items = slices.Grow(t.items, len(f.items))
	}
	for _, it := range f.items {
		it.list += base
		it.idx += int32(idx)
		if only && it.idx != t.onlyIdx {
			continue
		}
		if it.start >= 0 {
			it.start += off
			it.end += off
		}
		t.items = append(t.items, it)
	}
	for _, id := range f.other {
		t.mixed(id + base)
	}
	t.lists += f.lists
}

// mixed notes that list id holds an item that is not tracked.
func (t *listTrack) mixed(id int32) {
	if t.other == nil {
		t.other = map[int32]bool{}
	}
	t.other[id] = true
}

// trackedItem is one item of a tracked list: kept, with its text (marker
// and all) at buf[start:end], or dropped (start -1).
type trackedItem struct {
	list       int32
	idx        int32
	start, end int
}

// probeSize is how large the prompt would be with one more scope kept:
// exactly, or but for what the notices around it say (see freedMemo).
type probeSize struct {
	tokens int
	exact  bool
}

// probeEmptyMax bounds the lists with no item kept that one prober renders
// a pass for.
const probeEmptyMax = 8

// prober tells, for the list items dropped in cur, how large the prompt
// would be with one of them kept as well, working each out when first
// asked (a long fill asks of a few thousand):
//   - an item of a list that has an item kept goes in after the kept item
//     before it (a line break, then its text with its marker) or else
//     before the kept item after it (its text, then a line break): the
//     prompt grows by what that adds to the few lines around it (see
//     changeAdds), and by nothing else but what the notices of the scopes
//     around it say;
//   - for a list with none kept, a pass renders cur with one of its items
//     kept; any other item kept alone renders that text with the one
//     item's replaced by its own, exactly.
//
// An item with scopes inside it, without a text in the first pass, or of
// a list with items that are not tracked, gets no probe.
type prober struct {
	sr      *search
	add     Additive
	covered func(int) bool
	cur     attempt // the tracking pass of cur's drops
	curText string  // its text
	track   *listTrack
	// firstTexts maps the plan index of each scope the first pass (which
	// dropped nothing) rendered itself, not found in the cache, to its
	// text there; nil until first needed (see text).
	firstTexts map[int]string
	// at maps a plan index to its item in track, or -1; prevKept and
	// nextKept map an item to the kept item before and after it in its
	// list, or -1.
	at                 []int32
	prevKept, nextKept []int32
	// empty holds, for a list with no item kept, the pass with one of its
	// items kept, and where that item is in it; nil until first needed.
	empty map[int32]*emptyProbe
	// memo holds each item's answer by its index in track (tokens -2:
	// not yet worked out).
	memo []probeSize
	// counted keeps the counts of cur's text between cuts (see
	// changeAdds).
	counted map[[2]int]int
	buf     []byte
	sc      renderer
}

type emptyProbe struct {
	ok      bool
	one     int
	text    string
	tokens  int
	s, e    int
	counted map[[2]int]int
}

// newProber renders cur's drops again in a tracking pass, or returns nil.
func (sr *search) newProber(cur attempt, covered func(int) bool) *prober {
	p := sr.p
	add, ok := sr.rd.counter.(Additive)
	if !ok {
		return nil
	}
	t := &listTrack{}
	a, err := sr.trackingPass(t)
	if err != nil {
		return nil
	}
	pr := &prober{sr: sr, add: add, covered: covered, cur: a, curText: a.text(), track: t, counted: map[[2]int]int{}}
	if a.tokens != cur.tokens {
		return nil // not cur's drops
	}
	pr.at = make([]int32, len(p.scopes))
	for i := range pr.at {
		pr.at[i] = -1
	}
	n := len(t.items)
	pr.prevKept, pr.nextKept = make([]int32, n), make([]int32, n)
	pr.memo = make([]probeSize, n)
	for i := range pr.memo {
		pr.memo[i].tokens = -2
	}
	last := make([]int32, t.lists) // the last kept item of each list so far
	for i := range last {
		last[i] = -1
	}
	for i, it := range t.items {
		pr.at[it.idx] = int32(i)
		pr.prevKept[i] = last[it.list]
		if it.start >= 0 {
			last[it.list] = int32(i)
		}
	}
	for i := range last {
		last[i] = -1
	}
	for i := n - 1; i >= 0; i-- {
		it := t.items[i]
		pr.nextKept[i] = last[it.list]
		if it.start >= 0 {
			last[it.list] = int32(i)
		}
	}
	return pr
}

// trackingPass renders the plan's drops in full into t (see listTrack).
func (sr *search) trackingPass(t *listTrack) (attempt, error) {
	sizing := sr.sizing
	sr.track, sr.sizing = t, false
	defer func() { sr.track, sr.sizing = nil, sizing }()
	return sr.render()
}

// text returns scope d's text as the first pass, which dropped nothing,
// rendered it, in the same place as now: from the block of the scope
// around it that the pass found in the cache, or else from its own record.
func (pr *prober) text(d int) string {
	f := pr.sr.first
	if k := sort.Search(len(f.blocks), func(i int) bool { return f.blocks[i].base > d }) - 1; k >= 0 {
		b := f.blocks[k]
		if j := d - b.base; j > 0 && j < len(b.recs) {
			if int(b.recs[j].idx) == j {
				return b.recs[j].text
			}
			for _, rc := range b.recs[1:] {
				if int(rc.idx) == j {
					return rc.text
				}
			}
		}
	}
	if pr.firstTexts == nil {
		pr.firstTexts = map[int]string{}
		for _, rc := range f.recs {
			if rc.idx >= 0 {
				pr.firstTexts[int(rc.idx)] = rc.text
			}
		}
	}
	return pr.firstTexts[d]
}

// unit is item d's text with its marker, in pr.buf.
func (pr *prober) unit(d int) []byte {
	pr.buf = append(pr.buf[:0], pr.text(d)...)
	pr.buf = pr.sc.transform(pr.buf, 0, "- ", "  ", "")
	return pr.buf
}

// size tells how large the prompt would be with dropped scope d kept as
// well, if d is an item it can tell of.
func (pr *prober) size(d int) (probeSize, bool) {
	if pr == nil {
		return probeSize{}, false
	}
	i := pr.at[d]
	if i < 0 {
		return probeSize{}, false
	}
	if v := pr.memo[i]; v.tokens != -2 {
		return v, v.tokens >= 0
	}
	v := pr.work(d, i)
	pr.memo[i] = v
	return v, v.tokens >= 0
}

// work is size for d, item i of the track, not yet worked out; tokens -1
// for no answer.
func (pr *prober) work(d int, i int32) probeSize {
	none := probeSize{tokens: -1}
	p, t := pr.sr.p, pr.track
	if p.scopes[d].size != 0 || pr.text(d) == "" {
		return none
	}
	it := t.items[i]
	if it.start >= 0 || t.other[it.list] {
		return none
	}
	if prev, next := pr.prevKept[i], pr.nextKept[i]; prev >= 0 || next >= 0 {
		var x int
		var u []byte
		if prev >= 0 {
			x = t.items[prev].end
			u = append([]byte{'\n'}, pr.unit(d)...)
		} else {
			x = t.items[next].start
			u = append(pr.unit(d), '\n')
		}
		n, ok := pr.sr.rd.changeAdds(pr.add, pr.curText, x, x, string(u), pr.counted)
		if !ok {
			return none
		}
		return probeSize{tokens: pr.cur.tokens + n}
	}
	e := pr.emptyList(it.list)
	if e == nil || !e.ok {
		return none
	}
	if d == e.one {
		return probeSize{tokens: e.tokens, exact: true}
	}
	n, ok := pr.sr.rd.changeAdds(pr.add, e.text, e.s, e.e, string(pr.unit(d)), e.counted)
	if !ok {
		return none
	}
	return probeSize{tokens: e.tokens + n, exact: true}
}

// emptyList renders cur with one item of list id kept, when first asked.
func (pr *prober) emptyList(id int32) *emptyProbe {
	if e, ok := pr.empty[id]; ok {
		return e
	}
	if pr.empty == nil {
		pr.empty = map[int32]*emptyProbe{}
	}
	e := &emptyProbe{}
	if len(pr.empty) >= probeEmptyMax {
		return e // not remembered: another list may still be asked about
	}
	pr.empty[id] = e
	sr, p := pr.sr, pr.sr.p
	one := -1
	for _, it := range pr.track.items {
		if d := int(it.idx); it.list == id && p.drop[d] && p.scopes[d].size == 0 && pr.text(d) != "" && !pr.covered(d) {
			one = d
			break
		}
	}
	if one < 0 {
		return e
	}
	t1 := &listTrack{only: true, onlyIdx: int32(one)}
	p.drop[one] = false
	a1, err := sr.trackingPass(t1)
	p.drop[one] = true
	if err != nil {
		return e
	}
	// The item's list had none kept: the item is its only one now.
	for _, it := range t1.items {
		if int(it.idx) == one && it.start >= 0 && !t1.other[it.list] {
			*e = emptyProbe{ok: true, one: one, text: a1.text(), tokens: a1.tokens, s: it.start, e: it.end, counted: map[[2]int]int{}}
		}
	}
	return e
}

// probeLines is how many lines around a change changeAdds looks at for
// cuts where counts add.
const probeLines = 3

// changeAdds returns how many tokens replacing text[s:e] with u adds (less
// what it takes away). It looks for a cut where counts add in both texts
// at or before s (s itself, or the start of one of the few lines before
// it) and one at or after e (e, the start of one of the few lines after
// it, or the end): the counts outside them are the same in both texts, so
// the difference is that of the counts between them. It reports false
// when it finds no such cuts.
func (rd *Renderer) changeAdds(add Additive, text string, s, e int, u string, counted map[[2]int]int) (int, bool) {
	if s < 0 || e < s || e > len(text) {
		return 0, false
	}
	// The window: a few lines either side, the byte before them (for the
	// cut at their start), and after them up to the first byte that is
	// neither a space nor a tab (for the cut at their end).
	lo := s
	for n := 0; n < probeLines && lo > 0; n++ {
		i := strings.LastIndexByte(text[:lo-1], '\n')
		lo = i + 1
		if i < 0 {
			break
		}
	}
	hi := e
	for n := 0; n < probeLines && hi < len(text); n++ {
		i := strings.IndexByte(text[hi:], '\n')
		if i < 0 {
			hi = len(text)
			break
		}
		hi += i + 1
	}
	end := hi
	for end < len(text) && (text[end] == ' ' || text[end] == '\t') {
		end++
	}
	if end < len(text) {
		end++
	}
	w0 := max(lo-1, 0)
	before := text[w0:end]
	after := text[w0:s] + u + text[e:end]
	shift := len(u) - (e - s) // where a place after e moves to in after
	atEnd := end == len(text)
	// cut reports whether counts add at i in w, a window of the text from
	// w0 that ends where the text does when atEnd.
	cut := func(w string, i int) bool {
		if i == 0 && w0 == 0 || i == len(w) && atEnd {
			return true
		}
		j := i
		for j < len(w) && (w[j] == ' ' || w[j] == '\t') {
			j++
		}
		if j == len(w) && !atEnd || i == 0 {
			return false
		}
		return add.AddsAt(w, i)
	}
	a := -1 // in text
	for q := s; q >= lo; {
		if cut(before, q-w0) && cut(after, q-w0) {
			a = q
			break
		}
		if q == 0 {
			break
		}
		i := strings.LastIndexByte(text[:q-1], '\n')
		if i+1 < lo {
			break
		}
		q = i + 1
	}
	if a < 0 {
		return 0, false
	}
	b := -1 // in text
	for q := e; q <= hi; {
		if cut(before, q-w0) && cut(after, q-w0+shift) {
			b = q
			break
		}
		if q == len(text) {
			break
		}
		i := strings.IndexByte(text[q:], '\n')
		if i < 0 {
			q = len(text)
			continue
		}
		q += i + 1
	}
	if b < 0 {
		return 0, false
	}
	// The counter may keep what it counts: text may be a view of a
	// buffer that is written again, so that part goes as a copy. Its
	// count is the same for every change between the same cuts, which
	// counted keeps when given.
	c := rd.counter
	was, ok := counted[[2]int{a, b}]
	if !ok {
		was = c.Count(strings.Clone(before[a-w0 : b-w0]))
		if counted != nil {
			counted[[2]int{a, b}] = was
		}
	}
	return c.Count(after[a-w0:b-w0+shift]) - was, true
}
