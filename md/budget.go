package md

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Counter counts tokens. The tokens package provides exact counters; md
// declares only what it needs so that it imports nothing from loom.
type Counter interface {
	Count(text string) int
}

// Status is what the budget did with a scope.
type Status string

const (
	Kept      Status = "kept"
	Dropped   Status = "dropped"
	Truncated Status = "truncated"
)

// Entry is the report line of one scope.
type Entry struct {
	Name     string   `json:"name"`
	Tokens   int      `json:"tokens"`
	Status   Status   `json:"status"`
	Priority *int     `json:"priority"`
	Sources  []string `json:"sources"`
	Reason   string   `json:"reason,omitempty"`
	// Start and End locate a top-level scope's text (one inside no other
	// scope) in the rendered prompt. They are -1 for nested scopes, dropped
	// ones, and any whose text was reshaped by its surroundings (indented,
	// quoted).
	Start int `json:"-"`
	End   int `json:"-"`
}

// Report says what a render produced: the total, the budget, and a line for
// every named scope and every scope that was dropped or cut, in document
// order (see [Report.Sections]). Nothing is dropped without a line here.
//
// A Report is a value that may be copied; its copies share its lines. Its
// JSON is {"tokens", "budget", "sections"}.
type Report struct {
	Tokens int
	Budget *int
	lines  *lines
}

// lines are a report's entries, made the first time they are asked for: a
// tree of thousands of scopes (a memory store's) costs more to report on
// than to render, and most renders' reports are never read.
type lines struct {
	once sync.Once
	make func() []Entry
	// Without make, the lines are made from a render's results (see
	// Renderer.report).
	rd   *Renderer
	text string
	// recs and blocks are a pass's (see expand): the records a lean pass
	// left in the cache are put back only when the lines are made.
	recs   []rec
	blocks []block
	p      *plan
	cost   []int
	tokens int

	entries []Entry
}

// Sections returns the report's lines: one for every named scope and every
// scope that was dropped or cut, in document order. The first call makes
// them; the slice is shared by every copy of the report and must not be
// changed. It is safe to call concurrently.
func (r Report) Sections() []Entry {
	if r.lines == nil {
		return nil
	}
	r.lines.once.Do(func() {
		l := r.lines
		if l.make != nil {
			l.entries = l.make()
		} else {
			l.entries = l.rd.lines(l.text, expand(l.recs, l.blocks), l.p, l.cost, l.tokens)
		}
		// What the lines were made of is no longer kept.
		l.make, l.rd, l.text, l.recs, l.blocks, l.p, l.cost = nil, nil, "", nil, nil, nil, nil
	})
	return r.lines.entries
}

// NewReport returns a report of the given lines (see [Report.Sections]).
func NewReport(tokens int, budget *int, sections []Entry) Report {
	r := Report{Tokens: tokens, Budget: budget}
	r.setLines(func() []Entry { return sections })
	return r
}

func (r *Report) setLines(make func() []Entry) { r.lines = &lines{make: make} }

// reportJSON is a Report's JSON.
type reportJSON struct {
	Tokens   int     `json:"tokens"`
	Budget   *int    `json:"budget"`
	Sections []Entry `json:"sections"`
}

// MarshalJSON encodes the report with its lines, leaving <, > and &
// unescaped for the encoder that called it to escape or not.
func (r Report) MarshalJSON() ([]byte, error) {
	return MarshalJSONAs(reportJSON{r.Tokens, r.Budget, r.Sections()})
}

// UnmarshalJSON decodes what MarshalJSON encodes, refusing unknown fields.
func (r *Report) UnmarshalJSON(data []byte) error {
	var v reportJSON
	if err := UnmarshalJSONStrict(data, &v); err != nil {
		return err
	}
	*r = NewReport(v.Tokens, v.Budget, v.Sections)
	return nil
}

// MarshalJSONAs encodes v as encoding/json would, but without escaping <,
// > and &: for a MarshalJSON method, whose output the calling encoder then
// escapes as it was set to, so that a type with a method encodes to the
// same bytes as a plain struct would.
func MarshalJSONAs(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSONStrict decodes data into v, refusing fields v does not have:
// for an UnmarshalJSON method, which the calling decoder's own setting does
// not reach.
func UnmarshalJSONStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Result is a rendered prompt and its report.
type Result struct {
	Text   string
	Report Report
}

// OverBudgetError is returned when the scopes that may not be dropped are
// alone larger than the budget. The render still returns its best text.
type OverBudgetError struct {
	Tokens, Budget int
}

func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("prompt is %d tokens, %d over the budget of %d, with everything droppable dropped", e.Tokens, e.Tokens-e.Budget, e.Budget)
}

// ErrBadBudget is returned for a budget that is zero or negative.
var ErrBadBudget = errors.New("budget must be a positive number of tokens")

// Renderer renders trees to Markdown, within a token budget when it has one.
// A Renderer is safe for concurrent use.
type Renderer struct {
	tail       []Entry
	counter    Counter
	budget     int
	hasBudget  bool
	skipCounts bool
	cache      *Cache
	tune       tuning
}

// Option configures a [Renderer].
type Option func(*Renderer)

// WithCounter sets the token counter used for the report and the budget.
func WithCounter(c Counter) Option { return func(r *Renderer) { r.counter = c } }

// WithBudget sets the token budget. Render fails with [ErrBadBudget] when n is
// zero or negative.
func WithBudget(n int) Option {
	return func(r *Renderer) { r.budget, r.hasBudget = n, true }
}

// WithoutCounts leaves the report's token figures at zero when there is no
// budget, for a caller that wants the text alone: counting a large prompt
// from cold is most of the cost of rendering it. Truncation to a scope's own
// limit still counts what it cuts.
func WithoutCounts() Option { return func(r *Renderer) { r.skipCounts = true } }

// WithTail appends entries to every report, after the scopes': for what a
// caller left out before rendering. The report copies them once.
func WithTail(entries []Entry) Option { return func(r *Renderer) { r.tail = entries } }

// NewRenderer returns a renderer with the given options.
func NewRenderer(opts ...Option) *Renderer {
	r := &Renderer{tune: defaultTuning}
	for _, o := range opts {
		o(r)
	}
	return r
}

// String renders n with no budget and no counting. It is a convenience for
// tests and small prompts.
func String(n Node) string {
	r := renderer{}
	buf := getBuf()
	defer putBuf(buf)
	*buf = r.renderNode((*buf)[:0], n)
	return string(*buf)
}

// Write renders n with no budget to w, returning any write error.
func Write(w io.Writer, n Node) error {
	r := renderer{}
	buf := getBuf()
	defer putBuf(buf)
	*buf = r.renderNode((*buf)[:0], n)
	if r.err != nil {
		return r.err
	}
	_, err := w.Write(*buf)
	return err
}

// bufs recycles render buffers, so that rendering a large prompt again does
// not grow a new buffer from nothing each time.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func getBuf() *[]byte { return bufs.Get().(*[]byte) }

// putBuf returns a buffer to the pool unless it grew huge, which would pin
// memory for every later small render.
func putBuf(b *[]byte) {
	if cap(*b) <= 8<<20 {
		bufs.Put(b)
	}
}

// Write renders n and writes it to w. Partial output is never written: the
// text is complete before the first byte goes out.
func (rd *Renderer) Write(w io.Writer, n Node) (Report, error) {
	res, err := rd.Render(n)
	if err != nil {
		var over *OverBudgetError
		if !errors.As(err, &over) {
			return res.Report, err
		}
	}
	if _, werr := io.WriteString(w, res.Text); werr != nil {
		return res.Report, werr
	}
	return res.Report, err
}

// Render renders n. With a budget, scopes are dropped lowest priority first
// (the later of two equal ones first) until the text fits; the cutoff is found
// by searching over the drop order, guided by each scope's token count, so a
// render costs a few passes rather than one per scope. A truncatable scope
// that would be the last one dropped is cut at a line boundary instead. If
// the text cannot fit, Render returns it anyway with an *OverBudgetError.
func (rd *Renderer) Render(n Node) (Result, error) {
	if rd.hasBudget && rd.budget <= 0 {
		return Result{}, fmt.Errorf("%w (got %d)", ErrBadBudget, rd.budget)
	}
	if !rd.hasBudget {
		if rd.cache != nil {
			defer rd.cache.sweep()
		}
		text, recs, err := rd.plainPass(n)
		if err != nil {
			return Result{}, err
		}
		if rd.cache != nil {
			rd.cache.recsHint.Store(int64(len(recs)))
		}
		return Result{Text: text, Report: rd.report(text, recs, nil, nil, nil, -1)}, nil
	}
	if rd.counter == nil {
		return Result{}, errors.New("md: a budget needs a token counter")
	}
	if rd.cache != nil {
		defer rd.cache.sweep()
	}
	return rd.solve(n)
}

func (rd *Renderer) pass(n Node, p *plan) (string, []rec, error) {
	buf, recs, _, err := rd.passBuf(n, p, false)
	defer putBuf(buf)
	return string(*buf), recs, err
}

// passBuf renders n into a buffer from the pool, which the caller puts
// back. A lean pass leaves the records of scopes found whole in the cache
// there, but the scope's own: it returns them as blocks (see expand).
func (rd *Renderer) passBuf(n Node, p *plan, lean bool) (*[]byte, []rec, []block, error) {
	buf, recs, blocks, _, err := rd.passSized(n, p, lean, false, nil)
	return buf, recs, blocks, err
}

// passSized is passBuf, but a sizing pass (one with a plan that cuts
// nothing short, and a cache) writes the large scopes it finds whole in
// the cache at the top of the tree as stand-ins, which it returns (see
// standIn): its text is then only good for counting (see countStood).
func (rd *Renderer) passSized(n Node, p *plan, lean, sizing bool, track *listTrack) (*[]byte, []rec, []block, []stand, error) {
	sizing = sizing && p != nil && p.trunc == nil && rd.cache != nil && track == nil
	r := renderer{plan: p, counter: rd.counter, record: true, cache: rd.cache, count: rd.counts(), lean: lean && p != nil, track: track}
	// Room for every record the pass can make, so that appending a large
	// cached scope's records does not grow the slice again and again: with
	// a plan, at most one per scope not dropped (each scope dropped
	// directly takes at least itself away); without one, as many as the
	// last render without a plan made. A lean pass keeps one record for
	// each scope found whole in the cache, and warm, finds most there: it
	// grows its slice as it goes (the x10 workspace's first pass cleared
	// room for 22,000 records to make a dozen).
	switch {
	case p != nil && r.lean:
		r.recs = make([]rec, 0, 64)
	case p != nil:
		r.recs = make([]rec, 0, max(len(p.scopes)-p.cut, p.lastRecs)+16)
	case rd.cache != nil:
		r.recs = make([]rec, 0, rd.cache.recsHint.Load()+1)
	}
	buf := getBuf()
	// A pass that drops nothing renders what the last such pass did: make
	// room for that much at once rather than growing the buffer to it.
	if (p == nil || p.cut == 0) && rd.cache != nil && !sizing {
		if h := int(rd.cache.textHint.Load()); cap(*buf) < h {
			*buf = make([]byte, 0, h)
		}
	}
	var stands []stand
	if sizing {
		sz := sizer{r: &r, standMin: rd.tune.standMin}
		r.sizer = &sz
		*buf = sz.node((*buf)[:0], n)
		stands = sz.stands
		if rd.tune.onStands != nil {
			rd.tune.onStands(len(stands))
		}
	} else {
		*buf = r.renderNode((*buf)[:0], n)
	}
	if p != nil {
		p.lastRecs = len(r.recs)
	}
	if (p == nil || p.cut == 0) && rd.cache != nil && r.err == nil && !sizing {
		rd.cache.textHint.Store(int64(len(*buf)))
	}
	return buf, r.recs, r.blocks, stands, r.err
}

// sizer renders a sizing pass (see passSized). At the top of the tree, the
// groups and the blocks that neither indent nor prefix their text, the
// renderer joins children through it (see renderer.sizer), and it writes each
// large kept scope there that the cache has whole as its stand-in: the
// scope's text less the middle between its first and last cut where counts
// add, which its record's count covers. Nothing around such a scope
// reshapes it, and the text around it is what a full pass writes, so the
// full text is the sizing text with every stand-in's middle put back, and
// counts as countStood says. Everything else is rendered by the renderer.
// A budget's first pass, and a long fill's, need the prompt's count, not its text: the
// largest scopes (a memory store's, a skills catalogue) are then counted
// from their cached counts without copying megabytes of text.
type sizer struct {
	r        *renderer
	stands   []stand
	standMin int // see tuning
}

func (sz *sizer) node(buf []byte, n Node) []byte {
	r := sz.r
	switch n := n.(type) {
	case Group:
		return r.join(buf, n, r.sep)
	case *Block:
		if n != nil && n.Prefix == "" && n.Indent == "" {
			return r.join(buf, n.Children, n.Sep)
		}
	case *Scope:
		if out, ok := sz.standIn(buf, n); ok {
			return out
		}
	}
	// Below the top, everything renders as in any pass.
	r.sizer = nil
	buf = r.renderNode(buf, n)
	r.sizer = sz
	return buf
}

// standIn writes s as its stand-in when the cache has it whole, as
// [Scope.render] would find it, with a text of at least standMin bytes
// that has two cuts where counts add; it reports whether it did. Its
// records are made as the renderer makes those of a scope found in the
// cache.
func (sz *sizer) standIn(buf []byte, s *Scope) ([]byte, bool) {
	r := sz.r
	p := r.plan
	if s == nil || r.depth != 0 || r.offPlan != 0 || !r.record || !r.count {
		return buf, false
	}
	add, ok := r.counter.(Additive)
	if !ok {
		return buf, false
	}
	idx := p.indexOf(s, r.next)
	if idx < 0 || p.isDropped(idx) || !p.uncut(idx) {
		return buf, false
	}
	ck := cacheKey{s: s, sep: r.sep, inXML: r.inXML, depth: r.depth, lineStart: len(buf) == 0 || buf[len(buf)-1] == '\n'}
	drops := p.dropsIn(idx)
	c := r.cache.get(ck, drops)
	if c == nil || drops == nil && len(c.recs) != p.scopes[idx].size+1 || c.recs[0].tokens < 0 || len(c.text) < sz.standMin {
		return buf, false
	}
	t := c.text
	first := firstCut(add, t)
	if first < 0 {
		return buf, false
	}
	last := lastCut(add, t)
	if last <= first {
		return buf, false
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
		r.recs[j].idx += int32(idx)
	}
	r.next = idx + p.scopes[idx].size + 1
	r.kept += c.kept
	r.dropped += c.dropped
	sz.stands = append(sz.stands, stand{rec: at, first: first, last: last})
	buf = append(buf, t[:first]...)
	return append(buf, t[last:]...), true
}

// block is a scope a lean pass found in the cache: its own record is at
// index at of the pass's records, the records inside it are recs[1:] of
// the cache's (plan indexes from base, offsets from off).
type block struct {
	at, base, off int
	recs          []rec
}

// expand returns a lean pass's records with every block's put back in
// place, as a full pass would have made them.
func expand(recs []rec, blocks []block) []rec {
	if len(blocks) == 0 {
		return recs
	}
	n := len(recs)
	for _, b := range blocks {
		n += len(b.recs) - 1
	}
	out := make([]rec, 0, n)
	// pos[i] is where recs[i] lands in out, and pos[len(recs)] is len(out):
	// a record's count of the records inside it is made again from them,
	// as the blocks inside it bring theirs.
	pos := make([]int32, len(recs)+1)
	for i, rc := range recs {
		pos[i] = int32(len(out))
		out = append(out, rc)
		if len(blocks) > 0 && blocks[0].at == i {
			b := blocks[0]
			blocks = blocks[1:]
			for _, inner := range b.recs[1:] {
				inner.at += b.off
				inner.idx += int32(b.base)
				// A section around the block that went took the block's
				// scope with it (see Section.render), and so everything
				// inside it that rendered text.
				inner.gone = inner.gone || rc.gone && inner.text != ""
				out = append(out, inner)
			}
		}
	}
	pos[len(recs)] = int32(len(out))
	for i, rc := range recs {
		if rc.inside > 0 {
			out[pos[i]].inside = pos[i+1+int(rc.inside)] - pos[i] - 1
		} else if pos[i+1]-pos[i] > 1 { // a block's own record
			out[pos[i]].inside = pos[i+1] - pos[i] - 1
		}
	}
	return out
}

// counts reports whether renders count tokens.
func (rd *Renderer) counts() bool {
	return rd.counter != nil && (rd.hasBudget || !rd.skipCounts)
}

// total counts a whole rendered text from the counts of its top-level
// scopes (see countText).
func (rd *Renderer) total(text string, recs []rec) int {
	return countText(rd.counter, text, 0, recs, 0)
}

// attempt is one pass of the search: its text, records and count. The
// text stays in a buffer from the pool, which the search holds until it
// ends (or discards the attempt): most passes are wanted only for their
// count, and only the answer's text is copied out (see text).
type attempt struct {
	buf    *[]byte
	recs   []rec
	blocks []block // a lean pass's (see passBuf)
	tokens int
	// sized is set for a sizing pass's (see passSized): its text is not
	// the prompt's.
	sized bool
}

// search is the state of one budgeted render's passes.
type search struct {
	rd   *Renderer
	n    Node
	p    *plan
	held []*[]byte // the buffers of the passes' attempts
	lean bool      // the next pass is lean (see passBuf)
	// sizing makes the next pass a sizing pass if it can be (see
	// passSized).
	sizing bool
	// costs holds each scope's count when nothing is dropped.
	costs []int
	// track makes the next pass a tracking pass (see listTrack).
	track *listTrack
	// first is the first pass, which drops nothing: its records hold
	// every scope's text.
	first attempt
}

func (sr *search) cost() []int { return sr.costs }

// render renders the plan's current drops and counts the text.
func (sr *search) render() (attempt, error) {
	buf, recs, blocks, stands, err := sr.rd.passSized(sr.n, sr.p, sr.lean, sr.sizing, sr.track)
	sr.held = append(sr.held, buf)
	if err != nil {
		return attempt{}, err
	}
	// A scope's count is made from those directly inside it, so a lean
	// pass's blocks are not needed for it.
	tokens := countStood(sr.rd.counter, *buf, 0, recs, 0, stands)
	return attempt{buf: buf, recs: recs, blocks: blocks, tokens: tokens, sized: len(stands) > 0}, nil
}

// text is a copy of the attempt's text.
func (a attempt) text() string { return string(*a.buf) }

// discard puts a's buffer back in the pool before the search ends: a
// pass wanted only for its count leaves its buffer to the next pass (a
// fill that rejects scope after scope renders dozens of passes). a must
// not be used again.
func (sr *search) discard(a attempt) {
	if i := slices.Index(sr.held, a.buf); i >= 0 && a.buf != nil {
		sr.held = slices.Delete(sr.held, i, i+1)
		putBuf(a.buf)
	}
}

// release puts the passes' buffers back in the pool.
func (sr *search) release() {
	for _, b := range sr.held {
		putBuf(b)
	}
	sr.held = nil
}

// result is the answer: a's text and its report.
func (sr *search) result(a attempt) Result {
	text := a.text()
	return Result{Text: text, Report: sr.rd.report(text, a.recs, a.blocks, sr.p, sr.cost(), a.tokens)}
}

func (rd *Renderer) solve(n Node) (Result, error) {
	p := newPlan(n, rd.cache)
	c := rd.counter
	budget := rd.budget
	sr := &search{rd: rd, n: n, p: p}
	defer sr.release()
	tries := map[int]attempt{}
	try := func(k int) (attempt, error) {
		if a, ok := tries[k]; ok {
			return a, nil
		}
		if rd.tune.onTry != nil {
			rd.tune.onTry(k)
		}
		p.setCut(k)
		a, err := sr.render()
		if err != nil {
			return attempt{}, err
		}
		tries[k] = a
		return a, nil
	}
	// Every pass is lean, as its records are wanted for their counts, and
	// in full only if it is the answer. The first, which drops nothing,
	// also sizes, as its text is wanted only if it is the answer (it is
	// then rendered again); so do a long fill's (see fill).
	sr.lean, sr.sizing = true, true
	full, err := try(0)
	sr.sizing = false
	if err != nil {
		return Result{}, err
	}
	sr.first = full
	// Each scope's cost when nothing is dropped: the estimate's input and the
	// report's figure for scopes that end up dropped.
	cost := make([]int, len(p.scopes))
	sr.costs = cost
	setCost := func(idx int, rc *rec) {
		cost[idx] = rc.tokens
		if rc.tokens < 0 {
			cost[idx] = c.Count(rc.text)
		}
	}
	for i := range full.recs {
		if rc := &full.recs[i]; rc.idx >= 0 {
			setCost(int(rc.idx), rc)
		}
	}
	for _, b := range full.blocks {
		for i := 1; i < len(b.recs); i++ {
			setCost(b.base+int(b.recs[i].idx), &b.recs[i])
		}
	}
	finish := func(k int, a attempt) (Result, error) {
		if a.sized {
			delete(tries, k)
			sr.sizing = false
			var err error
			if a, err = try(k); err != nil {
				return Result{}, err
			}
		}
		p.setCut(k)
		p.addBack = -1
		if prev, ok := tries[k-1]; ok && k > 0 {
			p.addBack = prev.tokens
		}
		res := sr.result(a)
		if a.tokens > budget {
			return res, &OverBudgetError{Tokens: a.tokens, Budget: budget}
		}
		return res, nil
	}
	if full.tokens <= budget {
		return finish(0, full)
	}
	nOrder := len(p.order)
	if nOrder == 0 {
		return finish(0, full)
	}

	// Guess the cutoff from the costs, then confirm with exact counts:
	// tokens are nearly additive, so the guess is close. The first render
	// at the guess tells how far the costs' savings are from the real ones
	// (a list marker, a separator, a heading that goes with its section),
	// and the guess is scaled by that and tried again. From there the
	// search gallops outward to a bracket, one drop wide in the end: the
	// smallest cut that fits, with one drop fewer rendered and over budget,
	// so the kept set is maximal.
	share := p.shares(cost)
	saved := p.savings(cost, share)
	need := full.tokens - budget
	guess := func(scale float64) int {
		k := sort.Search(len(saved), func(k int) bool { return saved[k]*scale >= float64(need) })
		return min(max(k, 1), nOrder)
	}
	k := guess(1)
	best, err := try(k)
	if err != nil {
		return Result{}, err
	}
	if real := full.tokens - best.tokens; real > 0 && saved[k] > 0 && float64(real) != saved[k] {
		if k2 := guess(float64(real) / saved[k]); k2 != k {
			if _, err := try(k2); err != nil {
				return Result{}, err
			}
		}
	}
	// The bracket so far: lo the largest cut tried that is over budget
	// (the full render is), hi the smallest that fits, -1 for none.
	lo, hi := 0, -1
	for kk, a := range tries {
		if a.tokens > budget {
			lo = max(lo, kk)
		} else if hi < 0 || kk < hi {
			hi = kk
		}
	}
	if hi >= 0 && lo > hi {
		lo = 0 // not monotone: search the whole bracket below hi
	}
	// over reports whether cut m is over the budget. A cut one drop short
	// of one that fits is not rendered when the scope it keeps cannot fit in
	// the room that cut left, even if joining it saved fillSlack tokens: the
	// bound fill uses for every other scope.
	over := func(m int) (bool, error) {
		if a, ok := tries[m+1]; ok && a.tokens <= budget {
			if d := p.order[m]; !p.scopes[d].s.Truncatable {
				p.setCut(m + 1)
				if !p.covered(d) && a.tokens+p.ownCost(d, cost)-p.newFreed(c).of(d)-fillSlack > budget {
					return true, nil
				}
			}
		}
		a, err := try(m)
		if err != nil {
			return false, err
		}
		return a.tokens > budget, nil
	}
	if hi < 0 {
		// Gallop up from lo.
		for step := 1; hi < 0; step *= 2 {
			if lo >= nOrder {
				return finish(nOrder, tries[nOrder])
			}
			next := min(lo+step, nOrder)
			a, err := try(next)
			if err != nil {
				return Result{}, err
			}
			if a.tokens <= budget {
				hi = next
			} else {
				lo = next
			}
		}
	} else {
		// Gallop down from hi while the bracket is wide.
		for step := 1; hi-lo > 2*step; step *= 2 {
			next := hi - step
			isOver, err := over(next)
			if err != nil {
				return Result{}, err
			}
			if isOver {
				lo = next
				break
			}
			hi = next
		}
	}
	for hi-lo > 1 {
		m := (lo + hi) / 2
		isOver, err := over(m)
		if err != nil {
			return Result{}, err
		}
		if isOver {
			lo = m
		} else {
			hi = m
		}
	}
	best = tries[hi]

	// The last scope dropped may be cut instead, if it is truncatable.
	if d := p.order[hi-1]; p.scopes[d].s.Truncatable && !p.ancestorDropped(d, hi-1) {
		over := tries[hi-1].tokens - budget
		limit := cost[d] - over - 2
		for attemptN := 0; attemptN < 3 && limit > 0; attemptN++ {
			p.setCut(hi - 1)
			p.trunc = map[int]int{d: limit}
			a, err := sr.render()
			if err != nil {
				return Result{}, err
			}
			if a.tokens <= budget {
				p.trunc = nil
				p.cutAt, p.truncated = hi-1, d
				return sr.result(a), nil
			}
			limit -= a.tokens - budget + 2
		}
		p.trunc = nil
	}
	if best.tokens > budget {
		return finish(hi, best)
	}
	p.setCut(hi)
	p.need = map[int]int{}
	if prev, ok := tries[hi-1]; ok {
		p.need[p.order[hi-1]] = prev.tokens
	}
	cur, err := rd.fill(sr, cost, share, hi, best)
	if err != nil {
		return Result{}, err
	}
	if cur.sized { // the plan's drops are cur's
		sr.sizing = false
		if cur, err = sr.render(); err != nil {
			return Result{}, err
		}
	}
	return sr.result(cur), nil
}

// fillRounds bounds the rounds of a fill, each a pass or a few: a round
// that keeps nothing rejects one scope, and a prompt with thousands of
// small dropped scopes and a few tokens left could take thousands.
const fillRounds = 64

// tuning holds the search's thresholds, and observers a test may set
// (through options of export_test.go); a Renderer starts with
// defaultTuning.
type tuning struct {
	// standMin is the shortest text written as a stand-in: below it,
	// copying the text costs less than finding its cuts.
	standMin int
	// sizeAfter is the number of fill rounds after which its passes size,
	// and probeAfter the number after which it probes (see prober): a
	// tracking pass costs a few passes, and saves one per list item it
	// rules out.
	sizeAfter, probeAfter int
	// onTry is told of every cut the search renders (-1 for a fill's
	// pass), onStands how many stand-ins each sizing pass wrote, and
	// onProbed of every scope a probe ruled out, with the size it gave.
	onTry    func(k int)
	onStands func(n int)
	onProbed func(idx, size int, exact bool)
}

var defaultTuning = tuning{standMin: 4 << 10, sizeAfter: 4, probeAfter: 8}

// fillSlack is how many tokens joining a scope back into the text may save
// against its own count; a scope costing more than the room left plus this
// is not tried.
const fillSlack = 2

// fill adds back, highest priority first, the dropped scopes that still fit
// in the room the drop search left, so that the kept set is maximal: no
// single dropped scope could be kept as well within the budget. A dropped
// scope of higher priority than a kept one is therefore always one that did
// not fit. Scopes are added in batches by their counts and each batch is
// confirmed by rendering it, backing off to its longest prefix that fits;
// the first scope that did not fit is recorded with the size it would have
// made, for the report. cur is the render of the current drop set.
func (rd *Renderer) fill(sr *search, cost []int, share func(int) float64, k int, cur attempt) (attempt, error) {
	p := sr.p
	budget := rd.budget
	rejected := make([]bool, len(p.scopes))
	// rejections holds, for each scope rejected, what keeping it would
	// have taken out of the notices around it then (see freedMemo), and
	// the room there was. Once more of its siblings are kept that can grow
	// (the notice of the last one dropped goes with it), and so can the
	// room (keeping a scope elsewhere took a longer notice away): either
	// way the scope is tried again.
	type rejection struct{ d, freed, room int }
	var rejections []rejection
	covered := p.covered
	ownCost := func(d int) int { return p.ownCost(d, cost) }
	render := func() (attempt, error) {
		if rd.tune.onTry != nil {
			rd.tune.onTry(-1)
		}
		return sr.render()
	}
	// bound is the least keeping d can add: its own count, less what its
	// being dropped put in the text (see freedMemo) and the slack. (What a
	// render showed keeping one scope adds beyond its count says nothing
	// about another's: a heading comes back with the first entry of its
	// section only.)
	var freed *freedMemo
	bound := func(d int) int { return ownCost(d) - freed.of(d) - fillSlack }
	// adds estimates what keeping d adds: its own count and its share of
	// what its parent adds around each child.
	adds := func(d int) int { return ownCost(d) + int(math.Round(share(d))) }
	// mayFit reports whether dropped scope d may fit in room with e
	// tokens of a batch already in it, by its cost and its bound.
	var most int
	mayFit := func(d, e, room int) bool {
		if !p.drop[d] || rejected[d] || e+cost[d]-most-fillSlack > room && p.scopes[d].size == 0 || covered(d) {
			return false
		}
		return e+bound(d) <= room
	}
	// reject notes that keeping d would make the prompt size tokens (at
	// least, when not exact).
	reject := func(d, size int, exact bool) {
		rejected[d] = true
		rejections = append(rejections, rejection{d, freed.of(d), budget - cur.tokens})
		p.need[d] = size
		if !exact {
			if p.atLeast == nil {
				p.atLeast = map[int]bool{}
			}
			p.atLeast[d] = true
		}
	}
	// A round that only rejected a scope left the drops as they were, and
	// with them what keeping each scope frees (freed, most), and the room:
	// the next round works them out again only when a round kept some.
	// pool holds the scopes that a round's cost test can let through at a
	// room up to poolRoom and a most up to poolMost, highest priority
	// first, each with the least its cost test can give then (so at any
	// most up to poolMost); the rest are leaves too large by far (most of
	// 20,000 memories, with a few tokens left), which a round then does
	// not look at, and a round skips those of the pool too large for what
	// is left of the room without looking up anything of theirs.
	type candidate struct{ d, low int32 }
	var (
		stale              = true
		pool               []candidate
		poolRoom, poolMost = -1, -1
		// probes tells what keeping an item of a list adds, for the drops
		// as they are (see prober); probed is whether it was
		// worked out for them.
		probes *prober
		probed bool
	)
	for round := 0; round < fillRounds; round++ {
		// A fill that goes on past a few rounds is rejecting scopes one by
		// one with little room left, each with a pass that is wanted only
		// for its count: from here its passes size (see passSized), and
		// the answer is rendered again at the end.
		sr.sizing = round >= rd.tune.sizeAfter
		room := budget - cur.tokens
		if stale {
			freed = p.newFreed(rd.counter) // the drops are cur's
			// Most scopes are too large by far: their cost less the most
			// any scope could free is over the room already.
			most = freed.most()
			stale = false
			probes, probed = nil, false
			w := 0
			for _, r := range rejections {
				if freed.of(r.d) > r.freed || room > r.room {
					rejected[r.d] = false
					delete(p.need, r.d)
					delete(p.atLeast, r.d)
					continue
				}
				rejections[w] = r
				w++
			}
			rejections = rejections[:w]
		}
		// A long fill rules out, from one more pass, every list item that
		// does not fit by what keeping it adds exactly.
		if round >= rd.tune.probeAfter && !probed {
			probes, probed = sr.newProber(cur, covered), true
			// It may rule out thousands: room for them at once.
			need := make(map[int]int, len(p.need)+len(pool))
			maps.Copy(need, p.need)
			p.need = need
		}
		if room > poolRoom || most > poolMost {
			if pool == nil {
				pool = make([]candidate, 0, k)
			}
			pool, poolRoom, poolMost = pool[:0], room, most
			for j := k - 1; j >= 0; j-- {
				d := p.order[j]
				low := math.MinInt32
				if p.scopes[d].size == 0 {
					low = max(cost[d]-most-fillSlack, low)
				}
				if low <= room {
					pool = append(pool, candidate{int32(d), int32(low)})
				}
			}
		}
		var batch []int
		est := 0
		for _, c := range pool {
			// A scope that cannot fit on its own is passed over; the batch
			// ends at the first that may fit on its own but perhaps not
			// beside the batch, so that scopes go back highest priority
			// first, each tried before any of lower priority.
			if int(c.low) > room {
				continue
			}
			d := int(c.d)
			if !mayFit(d, 0, room) {
				continue
			}
			if pr, ok := probes.size(d); ok {
				size := pr.tokens
				if !pr.exact {
					size -= freed.of(d)
				}
				if size > budget {
					if rd.tune.onProbed != nil {
						rd.tune.onProbed(d, size, pr.exact)
					}
					reject(d, size, pr.exact)
					continue
				}
			}
			if est+int(c.low) > room || est+bound(d) > room {
				break
			}
			batch = append(batch, d)
			est += adds(d)
			if p.dropsIn(d) != nil {
				// Keeping d lets the scopes dropped inside it be tried,
				// before any of lower priority than theirs.
				break
			}
		}
		if len(batch) == 0 {
			return cur, nil
		}
		tried := map[int]attempt{}
		try := func(m int) (attempt, error) {
			for i, d := range batch {
				p.drop[d] = i >= m
			}
			if a, ok := tried[m]; ok {
				return a, nil
			}
			a, err := render()
			tried[m] = a
			return a, err
		}
		a, err := try(len(batch))
		if err != nil {
			return attempt{}, err
		}
		if a.tokens <= budget {
			sr.discard(cur)
			cur, stale = a, true
			continue
		}
		lo, hi := 0, len(batch) // the first lo fit; the first hi do not
		tried[0] = cur
		// Guess where the batch stops fitting from how far over it went:
		// leave out from its end the scopes whose counts cover that. Then
		// gallop from the guess to a bracket, and halve it.
		g, acc := len(batch), 0
		for g > 0 && acc < a.tokens-budget {
			g--
			acc += adds(batch[g])
		}
		if g > lo && g < hi {
			a, err := try(g)
			if err != nil {
				return attempt{}, err
			}
			if a.tokens <= budget {
				lo = g
				for step := 1; hi-lo > 1; step *= 2 {
					next := min(lo+step, hi-1)
					a, err := try(next)
					if err != nil {
						return attempt{}, err
					}
					if a.tokens > budget {
						hi = next
						break
					}
					lo = next
				}
			} else {
				hi = g
				for step := 1; hi-lo > 1; step *= 2 {
					next := max(hi-step, lo+1)
					a, err := try(next)
					if err != nil {
						return attempt{}, err
					}
					if a.tokens <= budget {
						lo = next
						break
					}
					hi = next
				}
			}
		}
		for hi-lo > 1 {
			m := (lo + hi) / 2
			a, err := try(m)
			if err != nil {
				return attempt{}, err
			}
			if a.tokens <= budget {
				lo = m
			} else {
				hi = m
			}
		}
		d := batch[lo]
		reject(d, tried[lo+1].tokens, true)
		stale = lo > 0 // the first lo are kept
		cur, err = try(lo)
		if err != nil {
			return attempt{}, err
		}
		// Only cur's text is wanted from here on.
		for _, a := range tried {
			if a.buf != cur.buf {
				sr.discard(a)
			}
		}
	}
	// Out of rounds: the scopes still worth a try are named in the report
	// (a workspace this large, with this little room, is rare; see
	// fillRounds).
	room := budget - cur.tokens
	for _, d := range p.order[:k] {
		if mayFit(d, 0, room) {
			if p.untried == nil {
				p.untried = make([]bool, len(p.scopes))
			}
			p.untried[d] = true
		}
	}
	return cur, nil
}

// noSources is the sources of a scope that has none: empty, not nil, so
// that JSON shows [].
var noSources = []string{}

// report builds the report of a finished render, whose text counts tokens
// (-1 to count it here). Its lines are made when first asked for, from
// what the render left: the text, its records, the plan and the costs,
// none of which changes after the render.
func (rd *Renderer) report(text string, recs []rec, blocks []block, p *plan, cost []int, tokens int) Report {
	var rep Report
	if rd.hasBudget {
		b := rd.budget
		rep.Budget = &b
	}
	switch {
	case !rd.counts():
		tokens = 0
	case tokens < 0:
		tokens = rd.total(text, expand(recs, blocks))
	}
	rep.Tokens = tokens
	rep.lines = &lines{rd: rd, text: text, recs: recs, blocks: blocks, p: p, cost: cost, tokens: tokens}
	return rep
}

// lines makes the lines of a report (see report).
func (rd *Renderer) lines(text string, recs []rec, p *plan, cost []int, tokensNow int) []Entry {
	n := len(recs)
	if p != nil {
		n = max(n, len(p.scopes))
	}
	sections := make([]Entry, 0, n+len(rd.tail))
	counting := rd.counts()
	count := func(rc rec) int {
		switch {
		case !counting:
			return 0
		case rc.tokens >= 0:
			return rc.tokens
		}
		return rd.counter.Count(rc.text)
	}
	cursor := 0
	locate := func(e *Entry, t string, depth int) {
		e.Start, e.End = -1, -1
		if t == "" || depth > 0 {
			return
		}
		if i := strings.Index(text[cursor:], t); i >= 0 {
			e.Start, e.End = cursor+i, cursor+i+len(t)
			cursor = e.Start
		}
	}
	// Priorities are copied into one slice, and the entries point into
	// it: one allocation, where a large tree has thousands of them.
	var prios []int
	entry := func(s *Scope) Entry {
		// Entries share the scope's sources, clipped so that an append
		// copies them.
		e := Entry{Name: s.Name, Sources: noSources}
		if len(s.Sources) > 0 {
			e.Sources = slices.Clip(s.Sources)
		}
		if e.Name == "" {
			e.Name = label(s)
		}
		if s.Prioritized {
			if len(prios) == cap(prios) {
				prios = make([]int, 0, max(n, 16))
			}
			prios = append(prios, s.Priority)
			e.Priority = &prios[len(prios)-1]
		}
		return e
	}
	if p == nil {
		for _, rc := range recs {
			if (rc.scope.Name == "" && rc.cut == nil) || rc.text == "" {
				continue // nothing of it is in the prompt, and nothing was dropped
			}
			e := entry(rc.scope)
			e.Tokens, e.Status = count(rc), Kept
			if rc.cut != nil {
				e.Status, e.Reason = Truncated, cutReason(rc.cut, rc.scope.MaxTokens)
			}
			locate(&e, rc.text, int(rc.depth))
			sections = append(sections, e)
		}
		sections = append(sections, rd.tail...)
		return sections
	}
	last := p.last()
	// Most dropped scopes get a reason written here, all into one buffer
	// that becomes one string at the end, which the entries' reasons are
	// cut from: one allocation for thousands of dropped scopes.
	rb := getBuf()
	defer putBuf(rb)
	reason := (*rb)[:0]
	// About a hundred bytes each.
	if n := p.cut*112 + 1024; cap(reason) < n {
		reason = make([]byte, 0, n)
	}
	cuts := make([]reasonCut, 0, len(p.order))
	rendered := make([]*rec, len(p.scopes))
	for i := range recs {
		if rc := &recs[i]; rc.idx >= 0 {
			rendered[rc.idx] = rc
		}
	}
	for idx, si := range p.scopes {
		var rc rec
		ok := rendered[idx] != nil
		if ok {
			rc = *rendered[idx]
		}
		direct := p.isDropped(idx)
		if si.s.Name == "" && ok && rc.cut == nil {
			continue
		}
		if ok && rc.text == "" && !rc.emptied {
			continue // it rendered nothing of its own: nothing to report
		}
		e := entry(si.s)
		switch {
		case ok && (rc.gone || rc.emptied):
			e.Tokens, e.Status, e.Start, e.End = cost[idx], Dropped, -1, -1
			e.Reason = fmt.Sprintf("everything in it was dropped to fit the budget of %d tokens, so it was left out", rd.budget)
			if rc.gone && !rc.emptied {
				e.Reason = fmt.Sprintf("left out with its section, whose entries were all dropped to fit the budget of %d tokens", rd.budget)
			}
		case ok:
			e.Tokens, e.Status = count(rc), Kept
			if rc.cut != nil {
				e.Status = Truncated
				if idx == p.truncated && p.cutAt >= 0 {
					e.Reason = fmt.Sprintf("cut by %d lines (%d tokens) to fit the budget of %d tokens", rc.cut.Lines, rc.cut.Tokens, rd.budget)
				} else {
					e.Reason = cutReason(rc.cut, si.s.MaxTokens)
				}
			}
			locate(&e, rc.text, int(rc.depth))
		case direct:
			e.Tokens, e.Status, e.Start, e.End = cost[idx], Dropped, -1, -1
			from := len(reason)
			reason = append(reason, "dropped to fit the budget of "...)
			reason = strconv.AppendInt(reason, int64(rd.budget), 10)
			reason = append(reason, " tokens (priority "...)
			reason = strconv.AppendInt(reason, int64(si.priority), 10)
			if need, ok := p.need[idx]; ok {
				reason = append(reason, "; keeping it would make the prompt "...)
				if p.atLeast[idx] {
					reason = append(reason, "at least "...)
				}
				reason = strconv.AppendInt(reason, int64(need), 10)
				reason = append(reason, " tokens)"...)
			} else if p.need != nil {
				reason = append(reason, "; it costs about "...)
				reason = strconv.AppendInt(reason, int64(cost[idx]), 10)
				reason = append(reason, " tokens, "...)
				reason = strconv.AppendInt(reason, int64(max(rd.budget-tokensNow, 0)), 10)
				reason = append(reason, " are left"...)
				if p.untried != nil && p.untried[idx] {
					reason = append(reason, "; it might fit, but the search stopped before trying it"...)
				}
				reason = append(reason, ')')
			} else if p.cutAt < 0 && p.addBack >= 0 && last == idx {
				reason = append(reason, "; keeping it would make the prompt "...)
				reason = strconv.AppendInt(reason, int64(p.addBack), 10)
				reason = append(reason, " tokens)"...)
			} else {
				reason = append(reason, ", among the lowest)"...)
			}
			cuts = append(cuts, reasonCut{len(sections), from, len(reason)})
		default:
			e.Tokens, e.Status, e.Start, e.End = cost[idx], Dropped, -1, -1
			e.Reason = "left out with the scope around it"
			for a := si.parent; a >= 0; a = p.scopes[a].parent {
				if p.isDropped(a) {
					e.Reason = fmt.Sprintf("inside %q, which was dropped", p.scopes[a].s.Name)
					break
				}
			}
		}
		sections = append(sections, e)
	}
	*rb = reason
	if len(cuts) > 0 {
		all := string(reason)
		for _, c := range cuts {
			sections[c.entry].Reason = all[c.from:c.to]
		}
	}
	sections = append(sections, rd.tail...)
	return sections
}

// reasonCut places an entry's reason in the report's shared reason text.
type reasonCut struct{ entry, from, to int }

func cutReason(c *cutInfo, own int) string {
	if own > 0 {
		return fmt.Sprintf("cut by %d lines (%d tokens) to its own limit of %d tokens", c.Lines, c.Tokens, own)
	}
	return fmt.Sprintf("cut by %d lines (%d tokens)", c.Lines, c.Tokens)
}

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

func (p *plan) walk(n Node, parent int) {
	switch n := n.(type) {
	case nil:
	case Group:
		for _, c := range n {
			p.walk(c, parent)
		}
	case *Scope:
		if n == nil {
			return
		}
		idx := len(p.scopes)
		if p.cache != nil {
			if sub := p.cache.subplan(n); sub != nil {
				p.scopes = append(p.scopes, sub...)
				p.scopes[idx].parent = parent
				for j := idx + 1; j < len(p.scopes); j++ {
					p.scopes[j].parent += idx
				}
				return
			}
		}
		p.scopes = append(p.scopes, scopeInfo{s: n, parent: parent, priority: n.Priority, prioritized: n.Prioritized, instead: n.Instead != nil, notice: n.Notice != nil})
		for _, c := range n.Children {
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
			p.cache.putSubplan(n, sub)
		}
	case *Block:
		if n != nil {
			p.walkAll(n.Children, parent)
		}
	case *Heading:
		if n != nil {
			p.walkAll(n.Children, parent)
		}
	case *Wrap:
		if n != nil {
			p.walkAll(n.Children, parent)
		}
	case *LinkNode:
		if n != nil {
			p.walk(n.Text, parent)
		}
	case *List:
		if n != nil {
			p.walkAll(n.Items, parent)
		}
	case *TitledList:
		if n != nil {
			p.walk(n.Title, parent)
			items, _ := n.shown()
			p.walkAll(items, parent)
		}
	case *XMLElement:
		if n != nil {
			p.walkAll(n.Children, parent)
		}
	case *QuoteBlock:
		if n != nil {
			p.walkAll(n.Children, parent)
		}
	case *Table:
		if n != nil {
			p.walkAll(n.Header, parent)
			for _, row := range n.Rows {
				p.walkAll(row, parent)
			}
		}
	case *Section:
		if n != nil {
			p.walk(n.Heading, parent)
			p.walkAll(n.Body, parent)
		}
	}
}

func (p *plan) walkAll(ns []Node, parent int) {
	for _, c := range ns {
		p.walk(c, parent)
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
