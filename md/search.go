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
