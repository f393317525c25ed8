package md

import (
	"slices"
	"sort"
)

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
	// costs holds each scope's count when nothing is dropped, and share
	// each scope's share of what its parent adds around its children
	// (see plan.shares).
	costs []int
	share func(idx int) float64
	// tries holds the cuts rendered so far, by the number of scopes of the
	// drop order they drop (see try).
	tries map[int]attempt
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

// inFull renders the plan's current drops, which are sizing pass a's,
// again in full, for the text. Its count is a's: a sizing pass counts its
// text as the full text counts (see countStood), so the answer's 170 KB
// on the large workspace at 32k are not compared and counted once more.
func (sr *search) inFull(a attempt) (attempt, error) {
	sr.sizing = false
	buf, recs, blocks, _, err := sr.rd.passSized(sr.n, sr.p, sr.lean, false, sr.track)
	sr.held = append(sr.held, buf)
	if err != nil {
		return attempt{}, err
	}
	return attempt{buf: buf, recs: recs, blocks: blocks, tokens: a.tokens}, nil
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

// solve renders n within the budget in the steps the package doc names:
// size (the first pass), cut (findCut), truncate the last scope dropped
// (truncateLast), and fill.
func (rd *Renderer) solve(n Node) (Result, error) {
	p := newPlan(n, rd.cache)
	sr := &search{rd: rd, n: n, p: p, tries: map[int]attempt{}}
	defer sr.release()
	// Every pass is lean, as its records are wanted for their counts, and
	// in full only if it is the answer. Every pass also sizes (writes the
	// large scopes it finds whole in the cache as stand-ins; see
	// passSized), as its text is wanted only if it is the answer, which is
	// then rendered once more in full: on the large workspace at 32k a cut
	// and a fill take six passes of ~170 KB each, which sizing makes ~2 KB
	// each, for one more full pass at the end.
	sr.lean, sr.sizing = true, true
	full, err := sr.try(0)
	if err != nil {
		return Result{}, err
	}
	sr.first = full
	sr.setCosts(full)
	if full.tokens <= rd.budget || len(p.order) == 0 {
		return sr.finish(0, full)
	}
	hi, fits, err := sr.findCut(full)
	if err != nil {
		return Result{}, err
	}
	if !fits {
		return sr.finish(len(p.order), sr.tries[len(p.order)])
	}
	if res, ok, err := sr.truncateLast(hi); err != nil || ok {
		return res, err
	}
	best := sr.tries[hi]
	if best.tokens > rd.budget {
		return sr.finish(hi, best)
	}
	p.setCut(hi)
	p.need = map[int]int{}
	if prev, ok := sr.tries[hi-1]; ok {
		p.need[p.order[hi-1]] = prev.tokens
	}
	cur, err := rd.fill(sr, sr.costs, sr.share, hi, best)
	if err != nil {
		return Result{}, err
	}
	if cur.sized { // the plan's drops are cur's
		if cur, err = sr.inFull(cur); err != nil {
			return Result{}, err
		}
	}
	return sr.result(cur), nil
}

// try renders the cut of the first k scopes of the drop order, once.
func (sr *search) try(k int) (attempt, error) {
	if a, ok := sr.tries[k]; ok {
		return a, nil
	}
	if sr.rd.tune.onTry != nil {
		sr.rd.tune.onTry(k)
	}
	sr.p.setCut(k)
	a, err := sr.render()
	if err != nil {
		return attempt{}, err
	}
	sr.tries[k] = a
	return a, nil
}

// setCosts takes each scope's cost, when nothing is dropped, from the
// first pass: the estimate's input and the report's figure for scopes that
// end up dropped.
func (sr *search) setCosts(full attempt) {
	cost := make([]int, len(sr.p.scopes))
	set := func(idx int, rc *rec) {
		cost[idx] = rc.tokens
		if rc.tokens < 0 {
			cost[idx] = sr.rd.counter.Count(rc.text)
		}
	}
	for i := range full.recs {
		if rc := &full.recs[i]; rc.idx >= 0 {
			set(int(rc.idx), rc)
		}
	}
	for _, b := range full.blocks {
		for i := 1; i < len(b.recs); i++ {
			set(b.base+int(b.recs[i].idx), &b.recs[i])
		}
	}
	sr.costs = cost
}

// finish answers with a, the render of cut k, rendered again in full if
// it was a sizing pass; over the budget, with an *OverBudgetError.
func (sr *search) finish(k int, a attempt) (Result, error) {
	p := sr.p
	p.setCut(k)
	if a.sized {
		var err error
		if a, err = sr.inFull(a); err != nil {
			return Result{}, err
		}
		sr.tries[k] = a
	}
	p.addBack = -1
	if prev, ok := sr.tries[k-1]; ok && k > 0 {
		p.addBack = prev.tokens
	}
	res := sr.result(a)
	if a.tokens > sr.rd.budget {
		return res, &OverBudgetError{Tokens: a.tokens, Budget: sr.rd.budget}
	}
	return res, nil
}

// findCut finds the cut: the smallest number of scopes of the drop order
// whose dropping makes the prompt fit, with one fewer over the budget, so
// that the kept set is maximal. It guesses from the costs, then confirms
// with exact counts: tokens are nearly additive, so the guess is close.
// The first render at the guess tells how far the costs' savings are from
// the real ones (a list marker, a separator, a heading that goes with its
// section), and the guess is scaled by that and tried again. From there
// the search gallops outward to a bracket, one drop wide in the end. fits
// is false when even dropping every scope does not fit.
func (sr *search) findCut(full attempt) (hi int, fits bool, err error) {
	p, budget, nOrder := sr.p, sr.rd.budget, len(sr.p.order)
	sr.share = p.shares(sr.costs)
	saved := p.savings(sr.costs, sr.share)
	need := full.tokens - budget
	guess := func(scale float64) int {
		k := sort.Search(len(saved), func(k int) bool { return saved[k]*scale >= float64(need) })
		return min(max(k, 1), nOrder)
	}
	k := guess(1)
	best, err := sr.try(k)
	if err != nil {
		return 0, false, err
	}
	if real := full.tokens - best.tokens; real > 0 && saved[k] > 0 && float64(real) != saved[k] {
		if k2 := guess(float64(real) / saved[k]); k2 != k {
			if _, err := sr.try(k2); err != nil {
				return 0, false, err
			}
		}
	}
	// The bracket so far: lo the largest cut tried that is over budget
	// (the full render is), hi the smallest that fits, -1 for none.
	lo := 0
	hi = -1
	for kk, a := range sr.tries {
		if a.tokens > budget {
			lo = max(lo, kk)
		} else if hi < 0 || kk < hi {
			hi = kk
		}
	}
	if hi >= 0 && lo > hi {
		lo = 0 // not monotone: search the whole bracket below hi
	}
	if hi < 0 {
		// Gallop up from lo.
		for step := 1; hi < 0; step *= 2 {
			if lo >= nOrder {
				return 0, false, nil
			}
			next := min(lo+step, nOrder)
			a, err := sr.try(next)
			if err != nil {
				return 0, false, err
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
			isOver, err := sr.overAt(next)
			if err != nil {
				return 0, false, err
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
		isOver, err := sr.overAt(m)
		if err != nil {
			return 0, false, err
		}
		if isOver {
			lo = m
		} else {
			hi = m
		}
	}
	return hi, true, nil
}

// overAt reports whether cut m is over the budget. A cut one drop short
// of one that fits is not rendered when the scope it keeps cannot fit in
// the room that cut left, even if joining it saved fillSlack tokens: the
// bound fill uses for every other scope.
func (sr *search) overAt(m int) (bool, error) {
	p, budget := sr.p, sr.rd.budget
	if a, ok := sr.tries[m+1]; ok && a.tokens <= budget {
		if d := p.order[m]; !p.scopes[d].s.Truncatable {
			p.setCut(m + 1)
			if !p.covered(d) && a.tokens+p.ownCost(d, sr.costs)-p.newFreed(sr.rd.counter).of(d)-fillSlack > budget {
				return true, nil
			}
		}
	}
	a, err := sr.try(m)
	if err != nil {
		return false, err
	}
	return a.tokens > budget, nil
}

// truncateLast cuts the last scope dropped at cut hi, when it is
// truncatable, instead of dropping it, if a cut of it fits: ok reports
// that res is the answer.
func (sr *search) truncateLast(hi int) (res Result, ok bool, err error) {
	p, budget := sr.p, sr.rd.budget
	d := p.order[hi-1]
	if !p.scopes[d].s.Truncatable || p.ancestorDropped(d, hi-1) {
		return Result{}, false, nil
	}
	over := sr.tries[hi-1].tokens - budget
	limit := sr.costs[d] - over - 2
	for range 3 {
		if limit <= 0 {
			break
		}
		p.setCut(hi - 1)
		p.trunc = map[int]int{d: limit}
		a, err := sr.render()
		if err != nil {
			return Result{}, false, err
		}
		if a.tokens <= budget {
			p.trunc = nil
			p.cutAt, p.truncated = hi-1, d
			return sr.result(a), true, nil
		}
		limit -= a.tokens - budget + 2
	}
	p.trunc = nil
	return Result{}, false, nil
}
