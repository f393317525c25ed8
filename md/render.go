package md

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// renderer holds the state of one render pass. The tree itself is never
// written to, so passes may run concurrently over one tree.
type renderer struct {
	sep     string // separator inherited by groups and scopes
	inXML   bool
	plan    *plan // nil when nothing is to be dropped or cut
	next    int   // index of the next scope in plan order
	offPlan int   // >0 while rendering notices, which are not in the plan
	depth   int   // scopes around the one being rendered
	dropped int   // scopes dropped so far, for notices
	kept    int   // prioritised scopes rendered so far, for sections
	record  bool  // keep a rec per scope, for the report
	count   bool  // count each scope's tokens as it is rendered
	recs    []rec
	lean    bool    // keep only a cached scope's own record (see passBuf)
	blocks  []block // the cached scopes a lean pass found
	counter Counter
	scratch []byte
	err     error
	cache   *Cache // reused scopes, for renders without a plan
	// settled is set by a pass without a plan (see plainPass): nothing it
	// records is taken back or rewritten later in the pass, so the cache
	// may keep a share of its records rather than a copy.
	settled bool
	fixed   int // open nodes that may rewrite what is written inside them
	// track, when set, records the items of the lists the pass renders
	// (see listTrack).
	track *listTrack
	// sizer, when set, renders the children join writes: a sizing pass
	// at the top of the tree (see sizer).
	sizer *sizer
}

// rec is what one scope rendered to. Records are kept in document order.
type rec struct {
	scope *Scope
	// idx is the plan index, -1 without a plan, and depth the number of
	// scopes around it. (Both fit 32 bits, which keeps a record, of which
	// a large prompt has hundreds per render, to 64 bytes.)
	idx   int32
	depth int32
	text  string
	// at is where text began in the buffer when the scope was rendered;
	// what is around it may since have reshaped it (see countText).
	at int
	// tokens is the count of text, or -1 when not counted.
	tokens int
	cut    *cutInfo
	// gone is set when the scope rendered text that a section around it
	// then removed, because every droppable scope in that section was
	// dropped: the text is not in the prompt.
	gone bool
	// emptied is set when the scope rendered nothing because everything
	// in it was dropped.
	emptied bool
	// inside is how many of the records after this one are of scopes
	// inside it, or 0 when that is not known (see block), so that
	// counting skips them at once (see countText).
	inside int32
}

// plainPass renders n without a plan, as pass does, keeping the records a
// cache needs: with a cache, scopes rendered before come from it, and the
// pass is lean (see passBuf): a scope found whole in the cache leaves its
// records there, returned as a block, which the report puts back only
// when its lines are asked for. (A warm render of a workspace of 20,000
// memories would otherwise copy 22,000 records, 1.4 MB, every time.)
func (rd *Renderer) plainPass(n Node) (string, []rec, []block, error) {
	if rd.cache == nil {
		text, recs, err := rd.pass(n, nil)
		return text, recs, nil, err
	}
	r := renderers.Get().(*renderer)
	defer putRenderer(r)
	*r = renderer{counter: rd.counter, record: true, cache: rd.cache, count: rd.counts(), settled: true, lean: true, scratch: r.scratch[:0]}
	r.recs = make([]rec, 0, rd.cache.recsHint.Load()+1)
	// Room for what the last such pass wrote and a little more, so that
	// the buffer rarely grows.
	size := 64 << 10
	if h := int(rd.cache.textHint.Load()); h > 0 {
		size = h + h/16 + 1024
	}
	bp := getBuf()
	defer putBuf(bp)
	buf := r.renderNode(slices.Grow((*bp)[:0], size), n)
	*bp = buf
	if r.err == nil {
		rd.cache.textHint.Store(int64(len(buf)))
	}
	return string(buf), r.recs, r.blocks, r.err
}

// renderers recycles the state of plain passes, which nothing keeps once a
// pass is over, with the scratch space of its line rewrites.
var renderers = sync.Pool{New: func() any { return new(renderer) }}

// putRenderer returns r to the pool, keeping its scratch space unless it
// grew large.
func putRenderer(r *renderer) {
	scratch := r.scratch
	if cap(scratch) > 256<<10 {
		scratch = nil
	}
	*r = renderer{scratch: scratch[:0]}
	renderers.Put(r)
}

func (r *renderer) renderNode(buf []byte, n Node) []byte {
	if n == nil {
		return buf
	}
	return n.render(r, buf)
}

// join writes children separated by sep, skipping every child that renders
// nothing, together with its separator.
func (r *renderer) join(buf []byte, children []Node, sep string) []byte {
	wrote := false
	for _, c := range children {
		buf, wrote = r.joinOne(buf, c, sep, wrote)
	}
	return buf
}

func (r *renderer) joinOne(buf []byte, c Node, sep string, wrote bool) ([]byte, bool) {
	switch n := c.(type) {
	case nil:
		return buf, wrote
	case Group:
		for _, cc := range n {
			buf, wrote = r.joinOne(buf, cc, sep, wrote)
		}
		return buf, wrote
	}
	mark := len(buf)
	if wrote {
		buf = append(buf, sep...)
	}
	at := len(buf)
	saved := r.sep
	r.sep = sep
	if r.sizer != nil {
		buf = r.sizer.node(buf, c)
	} else {
		buf = c.render(r, buf)
	}
	r.sep = saved
	if len(buf) == at {
		return buf[:mark], wrote
	}
	return buf, true
}

// text appends workspace text: valid UTF-8 always, escaped inside XML.
func (r *renderer) text(buf []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if !r.inXML {
		return append(buf, s...)
	}
	return appendEscaped(buf, s)
}

func appendEscaped(buf []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&quot;"
		case '\'':
			esc = "&apos;"
		default:
			continue
		}
		buf = append(buf, s[last:i]...)
		buf = append(buf, esc...)
		last = i + 1
	}
	return append(buf, s[last:]...)
}

// transform rewrites buf[from:] line by line: first is put before the first
// line, rest before every later line, and blank before blank lines (which
// get no indent, so no trailing spaces appear).
func (r *renderer) transform(buf []byte, from int, first, rest, blank string) []byte {
	if len(buf) > from && bytes.IndexByte(buf[from:], '\n') < 0 {
		// One line, the usual list item: shift it and put first before it.
		n := len(first)
		buf = append(buf, first...)
		copy(buf[from+n:], buf[from:len(buf)-n])
		copy(buf[from:], first)
		return buf
	}
	r.scratch = append(r.scratch[:0], buf[from:]...)
	buf = buf[:from]
	region := r.scratch
	for i := 0; ; i++ {
		nl := bytes.IndexByte(region, '\n')
		line := region
		if nl >= 0 {
			line = region[:nl]
		}
		switch {
		case i == 0:
			if len(line) == 0 && first != "" {
				buf = append(buf, strings.TrimRight(first, " \t")...)
			} else {
				buf = append(buf, first...)
			}
		case len(line) == 0:
			buf = append(buf, blank...)
		default:
			buf = append(buf, rest...)
		}
		buf = append(buf, line...)
		if nl < 0 {
			break
		}
		buf = append(buf, '\n')
		region = region[nl+1:]
	}
	return buf
}

func (t Text) render(r *renderer, buf []byte) []byte { return r.text(buf, string(t)) }

func (t Raw) render(r *renderer, buf []byte) []byte {
	s := string(t)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return append(buf, s...)
}

func (g Group) render(r *renderer, buf []byte) []byte { return r.join(buf, g, r.sep) }

func (b *Block) render(r *renderer, buf []byte) []byte {
	if b == nil {
		return buf
	}
	start := len(buf)
	reshape := b.Prefix != "" || b.Indent != ""
	if reshape {
		r.fixed++
	}
	buf = r.join(buf, b.Children, b.Sep)
	if reshape {
		r.fixed--
	}
	if len(buf) == start {
		return buf
	}
	if reshape {
		buf = r.transform(buf, start, b.Indent+b.Prefix, b.Indent, "")
	}
	return buf
}

func (h *Heading) render(r *renderer, buf []byte) []byte {
	if h == nil {
		return buf
	}
	level := min(max(h.Level, 1), 6)
	start := len(buf)
	buf = append(buf, "######"[:level]...)
	buf = append(buf, ' ')
	at := len(buf)
	r.fixed++
	buf = r.join(buf, h.Children, "")
	r.fixed--
	if len(buf) == at {
		return buf[:start]
	}
	for i := at; i < len(buf); i++ { // a heading is one line
		if buf[i] == '\n' {
			buf[i] = ' '
		}
	}
	return buf
}

func (w *Wrap) render(r *renderer, buf []byte) []byte {
	if w == nil {
		return buf
	}
	start := len(buf)
	buf = append(buf, w.Open...)
	at := len(buf)
	buf = r.join(buf, w.Children, "")
	if len(buf) == at {
		return buf[:start]
	}
	return append(buf, w.Close...)
}

func (c InlineCode) render(r *renderer, buf []byte) []byte {
	s := string(c)
	if s == "" {
		return buf
	}
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`")
	buf = append(buf, fence...)
	if pad {
		buf = append(buf, ' ')
	}
	buf = r.text(buf, s)
	if pad {
		buf = append(buf, ' ')
	}
	return append(buf, fence...)
}

func (l *LinkNode) render(r *renderer, buf []byte) []byte {
	if l == nil {
		return buf
	}
	start := len(buf)
	buf = append(buf, '[')
	at := len(buf)
	buf = r.renderNode(buf, l.Text)
	if len(buf) == at {
		buf = r.text(buf, l.Href)
	}
	buf = append(buf, "]("...)
	if strings.ContainsAny(l.Href, " ()<>") {
		buf = append(buf, '<')
		buf = r.text(buf, strings.NewReplacer("<", "%3C", ">", "%3E").Replace(l.Href))
		buf = append(buf, '>')
	} else {
		buf = r.text(buf, l.Href)
	}
	if l.Href == "" && len(buf) == at+3 {
		return buf[:start]
	}
	return append(buf, ')')
}

func (c *CodeBlock) render(r *renderer, buf []byte) []byte {
	if c == nil {
		return buf
	}
	longest, run := 0, 0
	for i := 0; i < len(c.Code); i++ {
		if c.Code[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	buf = append(buf, fence...)
	buf = r.text(buf, strings.ReplaceAll(c.Info, "\n", " "))
	buf = append(buf, '\n')
	if code := strings.TrimSuffix(c.Code, "\n"); code != "" || c.Code != "" {
		buf = r.text(buf, code)
		buf = append(buf, '\n')
	}
	return append(buf, fence...)
}

func (l *List) render(r *renderer, buf []byte) []byte {
	if l == nil {
		return buf
	}
	start := len(buf)
	if start > 0 && buf[start-1] != '\n' {
		buf = append(buf, '\n') // a list never runs on from inline text
	}
	listStart := len(buf)
	r.fixed++
	defer func() { r.fixed-- }()
	var listID int32
	if r.track != nil {
		listID = r.track.lists
		r.track.lists++
	}
	number, wrote, markerWidth := 0, false, 2
	var walk func(items []Node)
	walk = func(items []Node) {
		for _, it := range items {
			switch n := it.(type) {
			case nil:
				continue
			case Group:
				walk(n)
				continue
			case *List:
				if r.track != nil {
					r.track.mixed(listID)
				}
				mark := len(buf)
				if wrote {
					buf = append(buf, '\n')
				}
				at := len(buf)
				buf = n.render(r, buf)
				if len(buf) == at {
					buf = buf[:mark]
					continue
				}
				pad := strings.Repeat(" ", markerWidth)
				buf = r.transform(buf, at, pad, pad, "")
				wrote = true
				continue
			}
			mark := len(buf)
			if wrote {
				buf = append(buf, '\n')
			}
			at := len(buf)
			// An item that is a scope of the plan, in an unordered list
			// that nothing around can rewrite, is tracked.
			tracked := -1
			if s, ok := it.(*Scope); ok && r.track != nil && r.fixed == 1 && !l.Ordered && r.plan != nil && r.offPlan == 0 {
				if idx := r.plan.indexOf(s, r.next); idx >= 0 {
					tracked = len(r.track.items)
					r.track.items = append(r.track.items, trackedItem{list: listID, idx: int32(idx), start: -1})
				}
			}
			if tracked < 0 && r.track != nil {
				r.track.mixed(listID)
			}
			saved := r.sep
			r.sep = ""
			buf = it.render(r, buf)
			r.sep = saved
			if len(buf) == at {
				buf = buf[:mark]
				continue
			}
			number++
			marker := "- "
			if l.Ordered {
				marker = strconv.Itoa(number) + ". "
			}
			markerWidth = len(marker)
			buf = r.transform(buf, at, marker, strings.Repeat(" ", len(marker)), "")
			wrote = true
			if tracked >= 0 {
				r.track.items[tracked].start, r.track.items[tracked].end = at, len(buf)
			}
		}
	}
	walk(l.Items)
	if len(buf) == listStart {
		return buf[:start]
	}
	return buf
}

// visibleItems flattens groups and drops nil items, so that TitledList
// counts the items a reader would count.
func visibleItems(items []Node, out []Node) []Node {
	for _, it := range items {
		switch n := it.(type) {
		case nil:
		case Group:
			out = visibleItems(n, out)
		default:
			out = append(out, it)
		}
	}
	return out
}

func (t *TitledList) shown() (items []Node, more int) {
	items = visibleItems(t.Items, nil)
	if t.Max > 0 && len(items) > t.Max {
		return items[:t.Max], len(items) - t.Max
	}
	return items, 0
}

func (t *TitledList) render(r *renderer, buf []byte) []byte {
	if t == nil {
		return buf
	}
	items, more := t.shown()
	start := len(buf)
	if t.Title != nil {
		r.fixed++ // gone again when the list is empty
		buf = r.renderNode(buf, t.Title)
		r.fixed--
		if len(buf) > start {
			buf = append(buf, ':')
		}
	}
	at := len(buf)
	buf = (&List{Items: items}).render(r, buf)
	if len(buf) == at {
		return buf[:start]
	}
	if more > 0 {
		buf = append(buf, "\n…("...)
		buf = strconv.AppendInt(buf, int64(more), 10)
		buf = append(buf, " more)"...)
	}
	return buf
}

func (x *XMLElement) render(r *renderer, buf []byte) []byte {
	if x == nil {
		return buf
	}
	if x.memo != nil {
		if out, ok := x.renderMemo(r, buf); ok {
			return out
		}
	}
	buf = append(buf, '<')
	buf = append(buf, x.Tag...)
	for _, a := range x.Attrs {
		buf = append(buf, ' ')
		buf = append(buf, a.Name...)
		buf = append(buf, `="`...)
		v := a.Value
		if !utf8.ValidString(v) {
			v = strings.ToValidUTF8(v, "\uFFFD")
		}
		buf = appendEscaped(buf, v)
		buf = append(buf, '"')
	}
	tagEnd := len(buf)
	buf = append(buf, '>')
	at := len(buf)
	saved := r.inXML
	r.inXML = true
	r.fixed++
	buf = r.join(buf, x.Children, "\n")
	r.fixed--
	r.inXML = saved
	switch {
	case len(buf) == at:
		buf = append(buf[:tagEnd], "/>"...)
		return buf
	case bytes.IndexByte(buf[at:], '\n') < 0:
	default:
		buf = r.transform(buf, at, "\n  ", "  ", "")
		buf = append(buf, '\n')
	}
	buf = append(buf, "</"...)
	buf = append(buf, x.Tag...)
	buf = append(buf, '>')
	return buf
}

func (q *QuoteBlock) render(r *renderer, buf []byte) []byte {
	if q == nil {
		return buf
	}
	start := len(buf)
	r.fixed++
	buf = r.join(buf, q.Children, "\n\n")
	r.fixed--
	if len(buf) == start {
		return buf
	}
	return r.transform(buf, start, "> ", "> ", ">")
}

func (t *Table) render(r *renderer, buf []byte) []byte {
	if t == nil || (len(t.Header) == 0 && len(t.Rows) == 0) {
		return buf
	}
	cols := len(t.Header)
	for _, row := range t.Rows {
		cols = max(cols, len(row))
	}
	row := func(cells []Node) {
		buf = append(buf, '|')
		for i := 0; i < cols; i++ {
			buf = append(buf, ' ')
			if i < len(cells) {
				at := len(buf)
				buf = r.renderNode(buf, cells[i])
				buf = escapeCell(buf, at)
			}
			buf = append(buf, " |"...)
		}
	}
	r.fixed++
	defer func() { r.fixed-- }()
	row(t.Header)
	buf = append(buf, "\n|"...)
	for i := 0; i < cols; i++ {
		buf = append(buf, " --- |"...)
	}
	for _, cells := range t.Rows {
		buf = append(buf, '\n')
		row(cells)
	}
	return buf
}

// escapeCell makes buf[from:] safe inside one table cell.
func escapeCell(buf []byte, from int) []byte {
	cell := string(buf[from:])
	if !strings.ContainsAny(cell, "|\n") {
		return buf
	}
	cell = strings.ReplaceAll(cell, "|", `\|`)
	cell = strings.ReplaceAll(cell, "\n", " ")
	return append(buf[:from], cell...)
}

func (s *Section) render(r *renderer, buf []byte) []byte {
	if s == nil {
		return buf
	}
	start := len(buf)
	buf = r.renderNode(buf, s.Heading)
	headEnd := len(buf)
	if headEnd > start {
		buf = append(buf, "\n\n"...)
	}
	at := len(buf)
	dropped, kept := r.dropped, r.kept
	firstRec := len(r.recs)
	buf = r.join(buf, s.Body, "\n\n")
	// A section whose droppable parts were all dropped goes whole: what is
	// left (an introduction, a notice) was there for them. The scopes that
	// rendered inside it are then not in the prompt, and the report must
	// say so. (Without a plan nothing is dropped, so a settled pass only
	// ever takes back a body that wrote nothing.)
	if len(buf) == at || (r.dropped > dropped && r.kept == kept) {
		for i := firstRec; i < len(r.recs); i++ {
			if r.recs[i].text != "" {
				r.recs[i].gone = true
			}
		}
		return buf[:start]
	}
	return buf
}

func (f FuncNode) render(r *renderer, buf []byte) []byte {
	if f == nil {
		return buf
	}
	w := appendWriter{buf: buf}
	if err := f(&w); err != nil && r.err == nil {
		r.err = err
	}
	return w.buf
}

type appendWriter struct{ buf []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// render renders a scope in named steps: dropped by the plan (dropScope),
// found in the cache (cachedFor, fromCache), or walked (scopeChildren,
// scopeNotice, cutScope, closeRecord) and then kept in the cache
// (storeScope).
func (s *Scope) render(r *renderer, buf []byte) []byte {
	if s == nil {
		return buf
	}
	idx := -1
	if r.plan != nil && r.offPlan == 0 {
		idx = r.plan.indexOf(s, r.next)
		if idx >= 0 {
			r.next = idx + 1
		}
		if r.plan.isDropped(idx) {
			return r.dropScope(s, idx, buf)
		}
	}
	u := r.cacheUse(s, idx, buf)
	if u.ok {
		if c := r.cachedFor(u, idx); c != nil {
			return r.fromCache(c, idx, buf)
		}
	}
	keptBefore, droppedBefore, start := r.kept, r.dropped, len(buf)
	// A tracking pass leaves what it sees inside a scope with drops with
	// the scope in the cache (see trackFragment).
	tracking := r.track != nil && u.ok && u.drops != nil && r.fixed == 0
	trackFrom, trackLists := -1, int32(0)
	if tracking {
		trackFrom, trackLists = len(r.track.items), r.track.lists
		r.track.recording++
	}
	slot := -1
	if r.record && r.offPlan == 0 {
		slot = len(r.recs)
		r.recs = append(r.recs, rec{scope: s, idx: int32(idx), depth: int32(r.depth), tokens: -1})
	}
	buf = r.scopeChildren(s, buf, tracking)
	buf = r.scopeNotice(s, buf, start, droppedBefore)
	buf, cut := r.cutScope(s, idx, buf, start)
	if slot >= 0 {
		r.closeRecord(slot, buf, start, cut, droppedBefore)
	}
	if s.Prioritized && len(buf) > start && r.offPlan == 0 {
		r.kept++
	}
	// A tracking pass renders scopes found in the cache again, for their
	// lists: they are there already.
	if u.ok && slot >= 0 && r.err == nil && (r.track == nil || tracking) {
		v := r.storeScope(idx, slot, start, keptBefore, droppedBefore)
		if tracking {
			v.track = r.track.fragment(trackFrom, trackLists, start, idx)
		}
		r.cache.put(u.key, u.drops, v)
	}
	return buf
}

// dropScope renders what stands for a scope the plan drops: its Instead,
// if any, which is not in the plan.
func (r *renderer) dropScope(s *Scope, idx int, buf []byte) []byte {
	si := &r.plan.scopes[idx]
	r.next += si.size
	r.dropped++
	if si.instead {
		r.offPlan++
		buf = r.renderNode(buf, s.Instead)
		r.offPlan--
	}
	return buf
}

// scopeCacheUse is how a scope meets the cache in a pass: whether it may
// come from it and go into it, under which key, with which scopes inside
// it dropped (by plan index from the scope's; nil for none).
type scopeCacheUse struct {
	ok    bool
	key   cacheKey
	drops []bool
}

// cacheUse says how scope s at plan index idx meets the cache. Without a
// plan every scope may come from the cache; with one, a kept scope with
// nothing to cut in it (see plan.uncut), rendered before with the same
// scopes inside it dropped: none, as without a plan, or the same ones, as
// the same pass of an earlier search over the same tree.
func (r *renderer) cacheUse(s *Scope, idx int, buf []byte) scopeCacheUse {
	if r.cache == nil || r.offPlan != 0 || !r.record || r.plan != nil && (idx < 0 || !r.plan.uncut(idx)) {
		return scopeCacheUse{}
	}
	u := scopeCacheUse{ok: true, key: cacheKey{s: s, sep: r.sep, inXML: r.inXML, depth: r.depth, lineStart: len(buf) == 0 || buf[len(buf)-1] == '\n'}}
	if r.plan != nil {
		u.drops = r.plan.dropsIn(idx)
	}
	return u
}

// cachedFor returns the cache's rendering for u when this pass can use it.
func (r *renderer) cachedFor(u scopeCacheUse, idx int) *cached {
	c := r.cache.get(u.key, u.drops)
	switch {
	case c == nil:
		return nil
	case r.plan != nil && u.drops == nil && len(c.recs) != r.plan.scopes[idx].size+1:
		return nil // not every scope inside has its record
	case r.count && c.recs[0].tokens < 0:
		return nil // not counted
	case r.track != nil && u.drops != nil && (c.track == nil || r.fixed != 0):
		// A tracking pass renders every scope with drops in it again, so
		// that it sees the lists inside, unless an earlier tracking pass
		// left what it saw there with the scope.
		return nil
	}
	return c
}

// fromCache writes the cached rendering c of the scope at plan index idx
// and takes its records, whose places and plan indexes become this pass's.
func (r *renderer) fromCache(c *cached, idx int, buf []byte) []byte {
	if r.track != nil && c.track != nil {
		r.track.add(c.track, len(buf), idx)
	}
	at := len(r.recs)
	if r.lean && len(c.recs) > 1 {
		r.blocks = append(r.blocks, block{at: at, base: idx, off: len(buf), recs: c.recs})
		r.recs = append(r.recs, c.recs[0])
		r.recs[at].inside = 0 // they are in the block
	} else {
		r.recs = append(r.recs, c.recs...)
	}
	for j := at; j < len(r.recs); j++ {
		r.recs[j].at += len(buf)
		if r.plan == nil {
			r.recs[j].idx = -1
		} else {
			r.recs[j].idx += int32(idx)
		}
	}
	if r.plan != nil {
		r.next = idx + r.plan.scopes[idx].size + 1
	}
	r.kept += c.kept
	r.dropped += c.dropped
	return append(buf, c.text...)
}

// scopeChildren renders the scope's children with its parent's separator.
func (r *renderer) scopeChildren(s *Scope, buf []byte, tracking bool) []byte {
	r.depth++
	if s.Truncatable {
		r.fixed++ // what is inside may be cut
	}
	buf = r.join(buf, s.Children, r.sep)
	if tracking {
		r.track.recording--
	}
	if s.Truncatable {
		r.fixed--
	}
	r.depth--
	return buf
}

// scopeNotice adds the scope's notice when scopes inside it were dropped
// and something of it is left.
func (r *renderer) scopeNotice(s *Scope, buf []byte, start, droppedBefore int) []byte {
	if s.Notice == nil || len(buf) == start || r.dropped == droppedBefore {
		return buf
	}
	r.offPlan++
	buf, _ = r.joinOne(buf, s.Notice(r.dropped-droppedBefore), r.sep, true)
	r.offPlan--
	return buf
}

// cutScope cuts a truncatable scope's text, buf[start:], to the lower of
// its own limit and the plan's, when it is over.
func (r *renderer) cutScope(s *Scope, idx int, buf []byte, start int) ([]byte, *cutInfo) {
	if !s.Truncatable || len(buf) == start || r.counter == nil {
		return buf, nil
	}
	limit := s.MaxTokens
	if r.plan != nil && idx >= 0 {
		if l, ok := r.plan.trunc[idx]; ok && (limit == 0 || l < limit) {
			limit = l
		}
	}
	if limit <= 0 {
		return buf, nil
	}
	text := string(buf[start:])
	if r.counter.Count(text) <= limit {
		return buf, nil
	}
	out, info := cutLines(text, limit, r.counter, label(s))
	return append(buf[:start], out...), &info
}

// closeRecord fills in the scope's record once its text is final.
func (r *renderer) closeRecord(slot int, buf []byte, start int, cut *cutInfo, droppedBefore int) {
	rc := &r.recs[slot]
	rc.text = string(buf[start:])
	rc.at = start
	rc.inside = int32(len(r.recs) - slot - 1)
	rc.cut = cut
	rc.emptied = len(buf) == start && r.dropped > droppedBefore
	if r.count && r.counter != nil {
		rc.tokens = countText(r.counter, rc.text, start, r.recs[slot+1:], r.depth+1)
	}
}

// storeScope makes what the cache keeps of the scope whose record is at
// slot: its text and records, with places from start and plan indexes
// from idx.
func (r *renderer) storeScope(idx, slot, start, keptBefore, droppedBefore int) *cached {
	kept, dropped := r.kept-keptBefore, r.dropped-droppedBefore
	if r.plan == nil && r.settled && r.fixed == 0 && len(r.recs)-slot >= shareMin && !r.blocksFrom(slot) {
		// Nothing takes these records back or writes them again (see
		// renderer.settled): the cache copies them when first asked. (Few
		// are copied at once: what the cache keeps of a pass's records
		// keeps all of them.)
		return &cached{text: r.recs[slot].text, src: r.recs[slot:len(r.recs):len(r.recs)], base: start, kept: kept, dropped: dropped}
	}
	src := r.recsFrom(slot)
	v := newCached(len(src))
	copy(v.recs, src)
	for j := range v.recs {
		v.recs[j].at -= start
		if r.plan == nil {
			v.recs[j].idx = int32(j) // every scope inside renders a record
		} else {
			v.recs[j].idx -= int32(idx)
		}
	}
	v.text, v.kept, v.dropped = r.recs[slot].text, kept, dropped
	return v
}

// blocksFrom reports whether a lean pass left the records of a scope at or
// after slot in the cache (see recsFrom).
func (r *renderer) blocksFrom(slot int) bool {
	return len(r.blocks) > 0 && r.blocks[len(r.blocks)-1].at >= slot
}

// recsFrom returns the records from index slot on as a full pass makes
// them: a lean pass keeps only the own record of each block it found (see
// passBuf), and the cache must have every record of a scope.
func (r *renderer) recsFrom(slot int) []rec {
	i := len(r.blocks)
	for i > 0 && r.blocks[i-1].at >= slot {
		i--
	}
	if i == len(r.blocks) {
		return r.recs[slot:]
	}
	blocks := slices.Clone(r.blocks[i:])
	for j := range blocks {
		blocks[j].at -= slot
	}
	out := expand(r.recs[slot:], blocks)
	out[0].inside = int32(len(out) - 1)
	return out
}

// newCached returns a cached value with n records, in one allocation with
// them for a scope with none inside, as most are.
func newCached(n int) *cached {
	if n == 1 {
		one := &struct {
			cached
			rec [1]rec
		}{}
		one.recs = one.rec[:]
		return &one.cached
	}
	return &cached{recs: make([]rec, n)}
}

// shareMin is the fewest records of a scope the cache keeps as the pass's
// own rather than as a copy.
const shareMin = 64

func label(s *Scope) string {
	if len(s.Sources) > 0 {
		return s.Sources[0]
	}
	return s.Name
}
