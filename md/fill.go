package md

import (
	"maps"
	"math"
)

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
