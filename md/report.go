package md

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
		// A count is made from the scopes at the top, so a lean pass's
		// blocks are not needed for it (as in search.render).
		tokens = rd.total(text, recs)
	}
	rep.Tokens = tokens
	rep.lines = &lines{rd: rd, text: text, recs: recs, blocks: blocks, p: p, cost: cost, tokens: tokens}
	return rep
}

// lines makes the lines of a report (see report): one per named scope
// rendered, or, with a plan, one per scope of the plan that says something
// (kept, cut, or dropped and why), then the tail.
func (rd *Renderer) lines(text string, recs []rec, p *plan, cost []int, tokensNow int) []Entry {
	n := len(recs)
	if p != nil {
		n = max(n, len(p.scopes))
	}
	lw := &lineWriter{rd: rd, text: text, n: n, counting: rd.counts()}
	sections := make([]Entry, 0, n+len(rd.tail))
	if p == nil {
		for _, rc := range recs {
			if (rc.scope.Name == "" && rc.cut == nil) || rc.text == "" {
				continue // nothing of it is in the prompt, and nothing was dropped
			}
			e := lw.entry(rc.scope)
			e.Tokens, e.Status = lw.count(rc), Kept
			if rc.cut != nil {
				e.Status, e.Reason = Truncated, cutReason(rc.cut, rc.scope.MaxTokens)
			}
			lw.locate(&e, rc.text, int(rc.depth))
			sections = append(sections, e)
		}
		return append(sections, rd.tail...)
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
		rc := rendered[idx]
		if rc != nil && (si.s.Name == "" && rc.cut == nil || rc.text == "" && !rc.emptied) {
			continue // it rendered nothing of its own: nothing to report
		}
		e := lw.entry(si.s)
		switch {
		case rc != nil && (rc.gone || rc.emptied):
			e.Tokens, e.Status, e.Start, e.End = cost[idx], Dropped, -1, -1
			e.Reason = fmt.Sprintf("everything in it was dropped to fit the budget of %d tokens, so it was left out", rd.budget)
			if rc.gone && !rc.emptied {
				e.Reason = fmt.Sprintf("left out with its section, whose entries were all dropped to fit the budget of %d tokens", rd.budget)
			}
		case rc != nil:
			e.Tokens, e.Status = lw.count(*rc), Kept
			if rc.cut != nil {
				e.Status = Truncated
				if idx == p.truncated && p.cutAt >= 0 {
					e.Reason = fmt.Sprintf("cut by %d lines (%d tokens) to fit the budget of %d tokens", rc.cut.Lines, rc.cut.Tokens, rd.budget)
				} else {
					e.Reason = cutReason(rc.cut, si.s.MaxTokens)
				}
			}
			lw.locate(&e, rc.text, int(rc.depth))
		case p.isDropped(idx):
			e.Tokens, e.Status, e.Start, e.End = cost[idx], Dropped, -1, -1
			from := len(reason)
			reason = rd.dropReason(reason, p, idx, cost[idx], tokensNow, last == idx)
			cuts = append(cuts, reasonCut{len(sections), from, len(reason)})
		default:
			e.Tokens, e.Status, e.Start, e.End = cost[idx], Dropped, -1, -1
			e.Reason = insideReason(p, si.parent)
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
	return append(sections, rd.tail...)
}

// lineWriter holds what making a report's lines shares between them.
type lineWriter struct {
	rd       *Renderer
	text     string
	n        int // about how many entries there will be
	counting bool
	cursor   int // where in text the last located entry began
	// prios holds the entries' priorities, which they point into: one
	// allocation, where a large tree has thousands of them.
	prios []int
}

// entry starts the line of scope s: its name, sources and priority.
func (lw *lineWriter) entry(s *Scope) Entry {
	// Entries share the scope's sources, clipped so that an append copies
	// them.
	e := Entry{Name: s.Name, Sources: noSources}
	if len(s.Sources) > 0 {
		e.Sources = slices.Clip(s.Sources)
	}
	if e.Name == "" {
		e.Name = label(s)
	}
	if s.Prioritized {
		if len(lw.prios) == cap(lw.prios) {
			lw.prios = make([]int, 0, max(lw.n, 16))
		}
		lw.prios = append(lw.prios, s.Priority)
		e.Priority = &lw.prios[len(lw.prios)-1]
	}
	return e
}

// count is a record's tokens, 0 when the report does not count.
func (lw *lineWriter) count(rc rec) int {
	switch {
	case !lw.counting:
		return 0
	case rc.tokens >= 0:
		return rc.tokens
	}
	return lw.rd.counter.Count(rc.text)
}

// locate sets where a top-level scope's text t is in the prompt, searching
// on from the last one found; -1 when it is not at the top level or not
// found whole.
func (lw *lineWriter) locate(e *Entry, t string, depth int) {
	e.Start, e.End = -1, -1
	if t == "" || depth > 0 {
		return
	}
	if i := strings.Index(lw.text[lw.cursor:], t); i >= 0 {
		e.Start, e.End = lw.cursor+i, lw.cursor+i+len(t)
		lw.cursor = e.Start
	}
}

// dropReason appends why the scope at idx, which the plan drops, was
// dropped: what keeping it would have made the prompt, or what it costs
// against what is left, or that it was among the lowest.
func (rd *Renderer) dropReason(reason []byte, p *plan, idx, cost, tokensNow int, isLast bool) []byte {
	reason = append(reason, "dropped to fit the budget of "...)
	reason = strconv.AppendInt(reason, int64(rd.budget), 10)
	reason = append(reason, " tokens (priority "...)
	reason = strconv.AppendInt(reason, int64(p.scopes[idx].priority), 10)
	if need, ok := p.need[idx]; ok {
		reason = append(reason, "; keeping it would make the prompt "...)
		if p.atLeast[idx] {
			reason = append(reason, "at least "...)
		}
		reason = strconv.AppendInt(reason, int64(need), 10)
		return append(reason, " tokens)"...)
	}
	if p.need != nil {
		reason = append(reason, "; it costs about "...)
		reason = strconv.AppendInt(reason, int64(cost), 10)
		reason = append(reason, " tokens, "...)
		reason = strconv.AppendInt(reason, int64(max(rd.budget-tokensNow, 0)), 10)
		reason = append(reason, " are left"...)
		if p.untried != nil && p.untried[idx] {
			reason = append(reason, "; it might fit, but the search stopped before trying it"...)
		}
		return append(reason, ')')
	}
	if p.cutAt < 0 && p.addBack >= 0 && isLast {
		reason = append(reason, "; keeping it would make the prompt "...)
		reason = strconv.AppendInt(reason, int64(p.addBack), 10)
		return append(reason, " tokens)"...)
	}
	return append(reason, ", among the lowest)"...)
}

// insideReason says which dropped scope around a scope took it away,
// starting from its parent.
func insideReason(p *plan, parent int) string {
	for a := parent; a >= 0; a = p.scopes[a].parent {
		if p.isDropped(a) {
			return fmt.Sprintf("inside %q, which was dropped", p.scopes[a].s.Name)
		}
	}
	return "left out with the scope around it"
}

// reasonCut places an entry's reason in the report's shared reason text.
type reasonCut struct{ entry, from, to int }

func cutReason(c *cutInfo, own int) string {
	if own > 0 {
		return fmt.Sprintf("cut by %d lines (%d tokens) to its own limit of %d tokens", c.Lines, c.Tokens, own)
	}
	return fmt.Sprintf("cut by %d lines (%d tokens)", c.Lines, c.Tokens)
}
