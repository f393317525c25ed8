package md

import (
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
// not be changed after it was first rendered. Entries no render asked for
// since the previous render are dropped. An XMLMemo is safe for
// concurrent use; give each element its own.
type XMLMemo struct {
	mu      sync.Mutex
	m       map[*Scope]*xmlSeg
	gen     uint64
	counter Counter
	depth   int
	count   bool
	// last and lastSegs are the children and segments of the last render,
	// by position, so that an unchanged child is found without a map
	// lookup.
	last     []*Scope
	lastSegs []*xmlSeg
	// lastText is the last render's element text up to its last child,
	// lastRecs its children's records; lastTextOff and lastRecOff say
	// where each child's part starts (one more for the end).
	lastText    string
	lastTextOff []int
	lastRecs    []rec
	lastRecOff  []int
}

// NewXMLMemo returns an empty memo.
func NewXMLMemo() *XMLMemo { return &XMLMemo{m: map[*Scope]*xmlSeg{}, gen: 1} }

// xmlSeg is what one child scope rendered to inside the element.
type xmlSeg struct {
	gen      uint64
	afterTag bool   // rendered right after the opening tag (not at a line start)
	text     string // the child's text, indented; "" when it rendered nothing
	oneLine  bool   // the child's text has no line break
	recs     []rec  // its records, at relative to the start of its unindented text
	kept     int
	// tokens is the count of text+"\n", and cut whether a cut before text
	// (after a newline) is one where counts add; tokens is -1 when not
	// counted.
	tokens int
	cut    bool
}

// xmlWhole marks the record of a whole memoised element: an unnamed scope,
// which the report leaves out, whose count lets the scope around the
// element count it from its parts.
var xmlWhole = &Scope{}

// Memo makes the element keep what its children rendered to in m between
// renders (see [XMLMemo]), and returns the element.
func (x *XMLElement) Memo(m *XMLMemo) *XMLElement {
	x.memo = m
	return x
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
// is not a scope), leaving buf and the renderer as they were.
func (x *XMLElement) renderMemo(r *renderer, buf []byte) ([]byte, bool) {
	m := x.memo
	if r.plan != nil || r.offPlan > 0 || !r.record {
		return buf, false
	}
	for _, c := range x.Children {
		if c == nil {
			continue
		}
		if _, ok := c.(*Scope); !ok {
			return buf, false
		}
	}
	m.mu.Lock()
	if m.m == nil || !sameCounter(m.counter, r.counter) || m.depth != r.depth || m.count != r.count {
		m.m, m.counter, m.depth, m.count = map[*Scope]*xmlSeg{}, r.counter, r.depth, r.count
		m.last, m.lastSegs, m.lastText, m.lastTextOff, m.lastRecs, m.lastRecOff = nil, nil, "", nil, nil, nil
		m.gen++
	}
	gen := m.gen
	// A child at the position it had in the last render is "in place":
	// runs of those are copied from the last render's text and records
	// in one piece each.
	last, lastSegs := m.last, m.lastSegs
	lastText, lastTextOff, lastRecs, lastRecOff := m.lastText, m.lastTextOff, m.lastRecs, m.lastRecOff
	n := len(x.Children)
	segs := make([]*xmlSeg, n)
	inPlace := make([]bool, n)
	known := 1
	for i, c := range x.Children {
		s, _ := c.(*Scope)
		var sg *xmlSeg
		if i < len(last) && last[i] == s {
			sg, inPlace[i] = lastSegs[i], true
		} else if s != nil {
			sg = m.m[s]
		}
		if sg != nil {
			sg.gen = gen
			segs[i] = sg
			known += len(sg.recs)
		}
	}
	m.mu.Unlock()

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
	// filled in at the end. Room for the children's records is made once.
	r.recs = slices.Grow(r.recs, known)
	r.recs = append(r.recs, rec{scope: xmlWhole, idx: -1, depth: r.depth, tokens: -1})
	childRecs := len(r.recs)
	savedXML, savedSep := r.inXML, r.sep
	r.inXML, r.sep = true, "\n"
	var fresh []*Scope
	var freshSegs []*xmlSeg
	textOff := make([]int, n+1) // where each child's text starts, from elemStart
	recOff := make([]int, n+1)  // where its records start, from childRecs
	written, oneLine := 0, false
	runFrom := -1
	flush := func(to int) {
		if runFrom < 0 {
			return
		}
		tb, rb := len(buf)-elemStart, len(r.recs)-childRecs
		for j := runFrom; j < to; j++ {
			textOff[j] = tb + lastTextOff[j] - lastTextOff[runFrom]
			recOff[j] = rb + lastRecOff[j] - lastRecOff[runFrom]
		}
		buf = append(buf, lastText[lastTextOff[runFrom]:lastTextOff[to]]...)
		r.recs = append(r.recs, lastRecs[lastRecOff[runFrom]:lastRecOff[to]]...)
		runFrom = -1
	}
	for i, c := range x.Children {
		s, _ := c.(*Scope)
		sg := segs[i]
		if inPlace[i] && (s == nil || sg != nil && (sg.text == "" || sg.afterTag == (written == 0))) {
			if runFrom < 0 {
				runFrom = i
			}
			if sg != nil {
				if sg.text != "" {
					written++
					oneLine = sg.oneLine
				}
				r.kept += sg.kept
			}
			continue
		}
		flush(i)
		textOff[i], recOff[i] = len(buf)-elemStart, len(r.recs)-childRecs
		if s == nil {
			continue
		}
		afterTag := written == 0
		if sg == nil || sg.afterTag != afterTag {
			sg = x.renderChild(r, s, buf, afterTag)
			if r.err == nil {
				sg.gen = gen
				fresh = append(fresh, s)
				freshSegs = append(freshSegs, sg)
			}
			segs[i] = sg
		}
		if sg.text != "" {
			buf = append(buf, '\n')
			buf = append(buf, sg.text...)
			written++
			oneLine = sg.oneLine
		}
		r.recs = append(r.recs, sg.recs...)
		r.kept += sg.kept
	}
	flush(n)
	textOff[n], recOff[n] = len(buf)-elemStart, len(r.recs)-childRecs
	r.inXML, r.sep = savedXML, savedSep

	// save keeps what this render made for the next, with text the
	// element's text from its start (at least up to its last child).
	// With share, the records are kept as the pass's own rather than
	// copied: nothing writes the pass's records once made, but for a
	// node that takes them back, which none around the element does when
	// none may write its text again either (r.fixed == 0).
	save := func(text string, share bool) {
		if r.err != nil {
			return // a child failed: nothing of this render is kept
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, s := range fresh {
			m.m[s] = freshSegs[i]
		}
		now := make([]*Scope, n)
		for i, c := range x.Children {
			now[i], _ = c.(*Scope)
		}
		m.last, m.lastSegs = now, segs
		m.lastText, m.lastTextOff = text, textOff
		m.lastRecs, m.lastRecOff = r.recs[childRecs:len(r.recs):len(r.recs)], recOff
		if !share {
			m.lastRecs = slices.Clone(m.lastRecs)
		}
		if len(m.m) > 2*n+64 {
			for s, sg := range m.m {
				if sg.gen+1 < gen {
					delete(m.m, s)
				}
			}
		}
		m.gen++
	}

	switch {
	case written == 0:
		// Nothing inside: self-closed, and the element's record goes.
		save(string(buf[elemStart:]), false)
		copy(r.recs[recsStart:], r.recs[recsStart+1:])
		r.recs = r.recs[:len(r.recs)-1]
		return append(buf[:tagEnd], "/>"...), true
	case written == 1 && oneLine:
		// One line of content stays on the tag's line: render it the
		// usual way.
		save(string(buf[elemStart:]), false)
		r.recs = r.recs[:recsStart]
		r.kept = keptStart
		return buf[:elemStart], false
	}
	buf = append(buf, '\n')
	buf = append(buf, "</"...)
	buf = append(buf, x.Tag...)
	buf = append(buf, '>')
	whole := &r.recs[recsStart]
	// Nothing inside the element is written again once it is done, so
	// its text may be a view of the buffer (see renderer.textOf).
	text := r.textOf(buf, elemStart)
	save(text, r.views && r.fixed == 0)
	whole.text = text
	whole.at = elemStart
	if add, ok := r.counter.(Additive); ok && r.count {
		tokens := r.counter.Count(string(buf[elemStart:at])+"\n") + r.counter.Count(string(buf[len(buf)-len(x.Tag)-3:]))
		ok = add.AddsAt("\n"+string(buf[len(buf)-len(x.Tag)-3:]), 1)
		for _, sg := range segs {
			if !ok {
				break
			}
			if sg == nil || sg.text == "" {
				continue
			}
			ok = sg.cut && sg.tokens >= 0
			tokens += sg.tokens
		}
		if ok {
			whole.tokens = tokens
		}
	}
	if whole.tokens < 0 {
		// Not counted from its parts: the record would only repeat the
		// scope around it.
		whole.text = ""
	}
	return buf, true
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
	text := string(buf[start:])
	sg := &xmlSeg{afterTag: afterTag, kept: r.kept - keptAt, tokens: -1}
	sg.recs = append([]rec(nil), r.recs[recsAt:]...)
	for j := range sg.recs {
		sg.recs[j].at -= start
	}
	r.recs = r.recs[:recsAt]
	r.kept = keptAt
	if text == "" {
		return sg
	}
	sg.oneLine = strings.IndexByte(text, '\n') < 0
	sg.text = indentLines(text)
	if add, ok := r.counter.(Additive); ok && r.count {
		piece := sg.text + "\n"
		sg.tokens = r.counter.Count(piece)
		sg.cut = add.AddsAt("\n"+piece, 1)
	}
	return sg
}

// indentLines puts two spaces before every non-blank line of s, as an
// element indents its content.
func indentLines(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2*(strings.Count(s, "\n")+1))
	for {
		line, rest, more := strings.Cut(s, "\n")
		if line != "" {
			b.WriteString("  ")
			b.WriteString(line)
		}
		if !more {
			return b.String()
		}
		b.WriteByte('\n')
		s = rest
	}
}

func validUTF8(s string) string {
	if !utf8.ValidString(s) {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}
