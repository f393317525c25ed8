package md

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

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
		text, recs, blocks, err := rd.plainPass(n)
		if err != nil {
			return Result{}, err
		}
		if rd.cache != nil {
			rd.cache.recsHint.Store(int64(len(recs)))
		}
		return Result{Text: text, Report: rd.report(text, recs, blocks, nil, nil, -1)}, nil
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

// counts reports whether renders count tokens.
func (rd *Renderer) counts() bool {
	return rd.counter != nil && (rd.hasBudget || !rd.skipCounts)
}

// total counts a whole rendered text from the counts of its top-level
// scopes (see countText).
func (rd *Renderer) total(text string, recs []rec) int {
	return countText(rd.counter, text, 0, recs, 0)
}
