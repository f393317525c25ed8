package md

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// XMLMemo keeps, between renders, what each child scope of one XML element
// rendered to once indented inside the element, with its token count, so
// that rendering the element again after one child changed renders,
// indents and counts that child alone and copies the rest. Without it an
// element re-indents and the scopes around it re-count its whole content
// whenever any child changed: for a catalogue of thousands of entries,
// most of a re-render.
//
// The element's text is byte for byte what it is without the memo. An
// element's content is indented line by line ("  " before each non-blank
// line), so the indented text of the content is the indented texts of its
// children joined by newlines. Its count is the sum of its lines' pieces
// (the opening tag and a newline, each child's indented text and a
// newline, the closing tag) wherever every cut between pieces is one
// where counts add ([Additive]); the renderer checks each cut, and
// without such a counter or such cuts the element is counted whole, as
// before.
//
// The memo is used by renders without a budget (a budgeted render renders
// the element as it would without one), for elements whose children are
// scopes. Like [Cache], it keys children by pointer, so a child scope must
// not be changed after it was first rendered. Once it holds many more
// entries than the element has children, those the latest render did not
// use are dropped. An XMLMemo is safe for concurrent use; give each
// element its own.
type XMLMemo struct {
	mu      sync.Mutex
	m       map[*Scope]*xmlSeg
	counter Counter
	depth   int
	count   bool
	// last is the last render's children by position, with their
	// segments and where each one's part starts in lastText and lastRecs,
	// and one more entry, with no scope, where the parts end: a child
	// still at its position is found there without a map lookup, and runs
	// of such children are copied from the last render's text (the
	// element's, up to its last child) and records in one piece each.
	last     []xmlPos
	lastText string
	lastRecs []rec
	// spare is an array of positions that no render reads, for the next
	// render to fill, so that renders take turns with two arrays rather
	// than making one each. active counts the renders that may still read
	// last: the array that a render's own replaces becomes the spare only
	// when there are none.
	spare  []xmlPos
	active int
	// tags holds the counts of the element's opening and closing tags.
	tags *xmlTags
}

// xmlPos is one child of an element's render: the child (nil for none),
// its segment with a copy of the segment's summary, so that a render goes
// through the children in place without following a pointer for each, and
// where its part (a line break and its text) starts in the element's text
// and its records among the element's.
type xmlPos struct {
	s       *Scope
	seg     *xmlSeg
	info    segInfo
	textOff int
	recOff  int
	// moved is set when the child was not at this position in the last
	// render.
	moved bool
}

// xmlTags is what the counter made of an element's tags: head is the
// opening tag as written, headTokens the count of head+"\n", tailTokens
// that of the closing tag, and tailCut whether a cut before the closing
// tag (after a line break) is one where counts add. It is not changed
// once made.
type xmlTags struct {
	tag, head              string
	headTokens, tailTokens int
	tailCut                bool
}

// NewXMLMemo returns an empty memo.
func NewXMLMemo() *XMLMemo { return &XMLMemo{m: map[*Scope]*xmlSeg{}} }

// xmlSeg is what one child scope rendered to inside the element.
type xmlSeg struct {
	segInfo
	text string // the child's text, indented; "" when it rendered nothing
	recs []rec  // its records, at relative to the start of its unindented text
}

// segInfo is what a render needs of a segment to lay out and count the
// element when the segment's text and records are copied with others'.
type segInfo struct {
	// tokens is the count of text+"\n", and cut whether a cut before text
	// (after a newline) is one where counts add; tokens is -1 when not
	// counted.
	tokens   int
	kept     int
	hasText  bool // text is not ""
	afterTag bool // rendered right after the opening tag (not at a line start)
	oneLine  bool // the child's text has no line break
	cut      bool
}

// xmlWhole marks the record of a whole memoised element: an unnamed scope,
// which the report leaves out, whose count lets the scope around the
// element count it from its parts.
var xmlWhole = &Scope{}

// Memo returns the element made to keep what its children rendered to in
// m between renders (see [XMLMemo]). Like [Scope]'s setters it leaves x as
// it was: an element that was rendered never changes.
func (x *XMLElement) Memo(m *XMLMemo) *XMLElement {
	c := *x
	c.memo = m
	return &c
}

// sameCounter reports whether a and b are the same counter, without
// comparing values whose type cannot be compared.
func sameCounter(a, b Counter) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// renderMemo renders x through its memo, or reports false when the render
// is not one the memo serves (a budget, a notice, no records, a child that
// is not a scope), leaving buf and the renderer as they were. Its steps:
// claim the positions (memoStart), write the opening tag, the children
// (memoChildren) and the closing tag, count the whole, and save.
func (x *XMLElement) renderMemo(r *renderer, buf []byte) ([]byte, bool) {
	m := x.memo
	if r.plan != nil || r.offPlan > 0 || !r.record {
		return buf, false
	}
	mr, ok := m.start(x, r)
	if !ok {
		return buf, false
	}
	// The memo keeps its children's records as they are in r.recs, and
	// moves them: every one must be there, none left in the cache as a
	// block (see plainPass).
	defer func(lean bool) { r.lean = lean }(r.lean)
	r.lean = false
	elemStart := len(buf)
	recsStart := len(r.recs)
	keptStart := r.kept
	buf = append(buf, '<')
	buf = append(buf, x.Tag...)
	for _, a := range x.Attrs {
		buf = append(buf, ' ')
		buf = append(buf, a.Name...)
		buf = append(buf, `="`...)
		buf = appendEscaped(buf, validUTF8(a.Value))
		buf = append(buf, '"')
	}
	tagEnd := len(buf)
	buf = append(buf, '>')
	at := len(buf)
	// The element's own record goes first, as a scope's does; it is
	// filled in at the end. Room for the children's records is made once
	// (as many as last time, or one each).
	r.recs = slices.Grow(r.recs, max(len(mr.lastRecs), len(x.Children))+1)
	r.recs = append(r.recs, rec{scope: xmlWhole, idx: -1, depth: int32(r.depth), tokens: -1})
	childRecs := len(r.recs)
	savedXML, savedSep := r.inXML, r.sep
	r.inXML, r.sep = true, "\n"
	buf = x.memoChildren(r, buf, mr, elemStart, childRecs)
	r.inXML, r.sep = savedXML, savedSep
	pos := mr.pos

	switch {
	case mr.written == 0:
		// Nothing inside: self-closed, and the element's record goes.
		m.save(pos, mr.fresh, string(buf[elemStart:]), r.recs[childRecs:], false, nil, r.err == nil)
		copy(r.recs[recsStart:], r.recs[recsStart+1:])
		r.recs = r.recs[:len(r.recs)-1]
		return append(buf[:tagEnd], "/>"...), true
	case mr.written == 1 && mr.oneLine:
		// One line of content stays on the tag's line: render it the
		// usual way.
		m.save(pos, mr.fresh, string(buf[elemStart:]), r.recs[childRecs:], false, nil, r.err == nil)
		r.recs = r.recs[:recsStart]
		r.kept = keptStart
		return buf[:elemStart], false
	}
	buf = append(buf, '\n')
	buf = append(buf, "</"...)
	buf = append(buf, x.Tag...)
	buf = append(buf, '>')
	whole := &r.recs[recsStart]
	text := string(buf[elemStart:])
	whole.text = text
	whole.at = elemStart
	whole.inside = int32(len(r.recs) - childRecs)
	newTags := x.countWhole(r, whole, mr, buf[elemStart:at], buf[len(buf)-len(x.Tag)-4:])
	// With share, the records are kept as the pass's own rather than
	// copied: nothing writes the pass's records once made, but for a
	// node that takes them back, which none around the element does when
	// none may write its text again either (r.fixed == 0).
	m.save(pos, mr.fresh, text, r.recs[childRecs:], r.settled && r.fixed == 0, newTags, r.err == nil)
	if whole.tokens < 0 {
		// Not counted from its parts: the record would only repeat the
		// scope around it.
		whole.text = ""
	}
	return buf, true
}

// memoRender is one render through an element's memo: what it read of the
// last render, the positions it writes, and what it found writing the
// children.
type memoRender struct {
	pos      []xmlPos
	last     []xmlPos
	lastText string
	lastRecs []rec
	tags     *xmlTags
	// fresh lists the positions of children rendered here, for the map.
	freshBuf [4]int
	fresh    []int
	written  int  // children that wrote text
	oneLine  bool // the last of them has no line break
	// tokens sums the children's counts, while each may be added (adds;
	// see xmlSeg.cut).
	tokens int
	adds   bool
}

// start begins a render of x through m: it resets the memo when the
// render differs from the last in counter, depth or counting, and claims
// the positions. This render reads the last one's positions (last) and
// writes its own (pos). When no other render reads them, it takes the last
// ones and writes over them as it reads them, which leaves a child still
// at its position as it was but for its offsets; otherwise it writes the
// spare array (see XMLMemo.spare). ok is false, and nothing claimed, when a
// child is not a scope.
func (m *XMLMemo) start(x *XMLElement, r *renderer) (mr *memoRender, ok bool) {
	n := len(x.Children)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || !sameCounter(m.counter, r.counter) || m.depth != r.depth || m.count != r.count {
		m.m, m.counter, m.depth, m.count = map[*Scope]*xmlSeg{}, r.counter, r.depth, r.count
		m.last, m.lastText, m.lastRecs, m.tags = nil, "", nil, nil
	}
	mr = &memoRender{last: m.last, lastText: m.lastText, lastRecs: m.lastRecs, tags: m.tags, adds: true}
	mr.fresh = mr.freshBuf[:0]
	last := mr.last
	var pos []xmlPos
	if own := m.active == 0 && cap(last) >= n+1; own {
		pos = last[:n+1]
		m.last = nil
	} else {
		pos = m.spare
		m.spare = nil
		if cap(pos) < n+1 {
			pos = make([]xmlPos, n+1)
		}
		pos = pos[:n+1]
	}
	// Each position is read as last before it is written as pos: here
	// the child (the offsets of one not in place are read before they are
	// written, in memoChildren), and its offsets in memoChildren.
	for i, c := range x.Children {
		var s *Scope
		if c != nil {
			if s, ok = c.(*Scope); !ok {
				if m.spare == nil {
					m.spare = pos[:0]
				}
				return nil, false
			}
		}
		p := &pos[i]
		if i < len(last)-1 && last[i].s == s {
			// In place: nothing to write when pos is last.
			if p != &last[i] {
				p.s, p.seg, p.info = s, last[i].seg, last[i].info
			}
			p.moved = false
			continue
		}
		var sg *xmlSeg
		var info segInfo
		if s != nil {
			if sg = m.m[s]; sg != nil {
				info = sg.segInfo
			}
		}
		p.s, p.seg, p.info, p.moved = s, sg, info, true
	}
	m.active++
	mr.pos = pos
	return mr, true
}

// memoChildren writes the element's children: each run of children in
// place, copied at its end from where it was in the last render; each
// other child from its segment, rendered first when it has none for its
// place.
func (x *XMLElement) memoChildren(r *renderer, buf []byte, mr *memoRender, elemStart, childRecs int) []byte {
	pos, last, lastText, lastRecs := mr.pos, mr.last, mr.lastText, mr.lastRecs
	n := len(x.Children)
	// A run of children in place, from runFrom, is copied at its end from
	// where its first part was in the last render (runText, runRecs).
	runFrom, runText, runRecs := -1, 0, 0
	flush := func(to int) {
		if runFrom >= 0 {
			buf = append(buf, lastText[runText:last[to].textOff]...)
			r.recs = append(r.recs, lastRecs[runRecs:last[to].recOff]...)
			runFrom = -1
		}
	}
	dText, dRecs := 0, 0 // how far a run's parts moved since the last render
	for i := range n {
		p := &pos[i]
		s, in := p.s, &p.info
		if !p.moved && (s == nil || p.seg != nil && (!in.hasText || in.afterTag == (mr.written == 0))) {
			if runFrom < 0 {
				runFrom, runText, runRecs = i, last[i].textOff, last[i].recOff
				dText = len(buf) - elemStart - runText
				dRecs = len(r.recs) - childRecs - runRecs
			}
			p.textOff, p.recOff = last[i].textOff+dText, last[i].recOff+dRecs
			if in.hasText {
				mr.add(in)
			}
			r.kept += in.kept
			continue
		}
		flush(i)
		p.textOff, p.recOff = len(buf)-elemStart, len(r.recs)-childRecs
		if s == nil {
			continue
		}
		afterTag := mr.written == 0
		sg := p.seg
		if sg == nil || sg.afterTag != afterTag {
			sg = x.renderChild(r, s, buf, afterTag)
			if r.err == nil {
				mr.fresh = append(mr.fresh, i)
			}
			p.seg, p.info = sg, sg.segInfo
		}
		if sg.hasText {
			buf = append(buf, '\n')
			buf = append(buf, sg.text...)
			mr.add(&sg.segInfo)
		}
		r.recs = append(r.recs, sg.recs...)
		r.kept += sg.kept
	}
	flush(n)
	pos[n] = xmlPos{textOff: len(buf) - elemStart, recOff: len(r.recs) - childRecs}
	return buf
}

// add notes a child that wrote text.
func (mr *memoRender) add(in *segInfo) {
	mr.written++
	mr.oneLine = in.oneLine
	mr.tokens += in.tokens
	mr.adds = mr.adds && in.cut && in.tokens >= 0
}

// countWhole counts the whole element from its tags (head, the opening
// tag, and tail, "\n</tag>") and its children's counts, where counts add
// at both seams; it returns the tags' counts when they were made anew.
func (x *XMLElement) countWhole(r *renderer, whole *rec, mr *memoRender, head, tail []byte) *xmlTags {
	add, ok := r.counter.(Additive)
	if !ok || !r.count || !mr.adds {
		return nil
	}
	tags, newTags := mr.tags, (*xmlTags)(nil)
	if tags == nil || tags.tag != x.Tag || tags.head != string(head) {
		tags = &xmlTags{tag: x.Tag, head: string(head)}
		tags.headTokens = r.counter.Count(tags.head + "\n")
		tags.tailTokens = r.counter.Count(string(tail[1:]))
		tags.tailCut = add.AddsAt(string(tail), 1)
		newTags = tags
	}
	if tags.tailCut {
		whole.tokens = tags.headTokens + mr.tokens + tags.tailTokens
	}
	return newTags
}

// save keeps what a render made for the next: its positions pos, whose
// fresh entries go into the map; text, the element's text from its start
// (at least up to its last child); and recs, the children's records,
// which are copied unless share (see renderMemo). A render whose child
// failed (ok false) keeps nothing. Either way it no longer reads the last
// render's positions.
func (m *XMLMemo) save(pos []xmlPos, fresh []int, text string, recs []rec, share bool, tags *xmlTags, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.active--
	if !ok {
		if m.spare == nil {
			m.spare = pos
		}
		return
	}
	for _, i := range fresh {
		m.m[pos[i].s] = pos[i].seg
	}
	if share {
		recs = recs[:len(recs):len(recs)]
	} else {
		recs = slices.Clone(recs)
	}
	old := m.last
	m.last, m.lastText, m.lastRecs = pos, text, recs
	if m.active == 0 && m.spare == nil {
		// No render reads the array this one replaces.
		m.spare = old
	}
	if tags != nil {
		m.tags = tags
	}
	if n := len(pos) - 1; len(m.m) > 2*n+64 {
		// Keep what this render used.
		m.m = make(map[*Scope]*xmlSeg, n)
		for _, p := range pos {
			if p.s != nil && p.seg != nil {
				m.m[p.s] = p.seg
			}
		}
	}
}

// renderChild renders the child scope s as the element's join would, at
// the end of buf (after the opening tag when afterTag, else after a line
// break), and returns its segment. buf itself is left as it was: the
// caller writes the segment's text.
func (x *XMLElement) renderChild(r *renderer, s *Scope, buf []byte, afterTag bool) *xmlSeg {
	if !afterTag {
		buf = append(buf, '\n')
	}
	start := len(buf)
	recsAt, keptAt := len(r.recs), r.kept
	// The child is rendered past the end of the caller's buffer, where
	// the caller then writes: nothing of it may be a view.
	r.fixed++
	buf = s.render(r, buf)
	r.fixed--
	out := buf[start:]
	var sg *xmlSeg
	if recs := r.recs[recsAt:]; len(recs) == 1 {
		// The usual entry, one scope: its record comes with its segment.
		one := &struct {
			xmlSeg
			rec [1]rec
		}{}
		sg = &one.xmlSeg
		sg.recs = one.rec[:]
		copy(sg.recs, recs)
	} else {
		sg = &xmlSeg{recs: slices.Clone(recs)}
	}
	sg.afterTag, sg.kept, sg.tokens = afterTag, r.kept-keptAt, -1
	for j := range sg.recs {
		sg.recs[j].at -= start
	}
	r.recs = r.recs[:recsAt]
	r.kept = keptAt
	if len(out) == 0 {
		return sg
	}
	sg.hasText = true
	sg.oneLine = bytes.IndexByte(out, '\n') < 0
	// line is the indented text between line breaks: the segment's text,
	// what is counted with the break after it, and where a cut before it
	// is checked with the break before it.
	line := indentLines(out)
	sg.text = line[1 : len(line)-1]
	if add, ok := r.counter.(Additive); ok && r.count {
		sg.tokens = r.counter.Count(line[1:])
		sg.cut = add.AddsAt(line, 1)
	}
	return sg
}

// indentLines puts two spaces before every non-blank line of s, as an
// element indents its content, between two line breaks.
func indentLines(s []byte) string {
	var b strings.Builder
	b.Grow(len(s) + 2*(bytes.Count(s, []byte{'\n'})+1) + 2)
	b.WriteByte('\n')
	for {
		line, rest, more := bytes.Cut(s, []byte{'\n'})
		if len(line) > 0 {
			b.WriteString("  ")
			b.Write(line)
		}
		b.WriteByte('\n')
		if !more {
			return b.String()
		}
		s = rest
	}
}

func validUTF8(s string) string {
	if !utf8.ValidString(s) {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}
