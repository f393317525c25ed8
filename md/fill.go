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
	// sizeAfter is the number of fill rounds after which its passes size
	// (0: from the first, as the cut's do; tests set more to check full
	// passes in a fill), and probeAfter the number after which it probes
	// (see prober): a tracking pass costs a few passes, and saves one per
	// list item it rules out.
	sizeAfter, probeAfter int
	// onTry is told of every cut the search renders (-1 for a fill's
	// pass), onStands how many stand-ins each sizing pass wrote, and
	// onProbed of every scope a probe ruled out, with the size it gave.
	onTry    func(k int)
	onStands func(n int)
	onProbed func(idx, size int, exact bool)
}

var defaultTuning = tuning{standMin: 4 << 10, sizeAfter: 0, probeAfter: 8}

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
// made, for the report. cur is the render of the current drop set, k the
// cut. Each round: refresh what the drops decide (when a round kept some),
// start probes (in a long fill), refresh the pool, take the next batch,
// settle it.
func (rd *Renderer) fill(sr *search, cost []int, share func(int) float64, k int, cur attempt) (attempt, error) {
	f := &filler{rd: rd, sr: sr, p: sr.p, cost: cost, share: share, k: k, budget: rd.budget, cur: cur,
		rejected: make([]bool, len(sr.p.scopes)), stale: true, poolRoom: -1, poolMost: -1}
	for round := 0; round < fillRounds; round++ {
		// A fill's passes are wanted for their counts: they size (see
		// passSized), and the answer is rendered again at the end.
		sr.sizing = round >= rd.tune.sizeAfter
		room := f.budget - f.cur.tokens
		if f.stale {
			f.refresh(room)
		}
		if round >= rd.tune.probeAfter && !f.probed {
			f.startProbes()
		}
		if room > f.poolRoom || f.most > f.poolMost {
			f.refreshPool(room)
		}
		batch := f.nextBatch(room)
		if len(batch) == 0 {
			return f.cur, nil
		}
		if err := f.settle(batch); err != nil {
			return attempt{}, err
		}
	}
	// Out of rounds: the scopes still worth a try are named in the report
	// (a workspace this large, with this little room, is rare; see
	// fillRounds).
	room := f.budget - f.cur.tokens
	for _, d := range f.p.order[:k] {
		if f.mayFit(d, 0, room) {
			if f.p.untried == nil {
				f.p.untried = make([]bool, len(f.p.scopes))
			}
			f.p.untried[d] = true
		}
	}
	return f.cur, nil
}

// filler is the state of one fill (see fill).
type filler struct {
	rd     *Renderer
	sr     *search
	p      *plan
	cost   []int
	share  func(int) float64
	k      int // the cut: the scopes that may come back are p.order[:k]
	budget int
	cur    attempt // the render of the current drops
	// rejected marks the scopes tried and found not to fit; rejections
	// holds, for each, what keeping it would have taken out of the
	// notices around it then (see freedMemo), and the room there was.
	// Once more of its siblings are kept that can grow (the notice of the
	// last one dropped goes with it), and so can the room (keeping a scope
	// elsewhere took a longer notice away): either way the scope is tried
	// again.
	rejected   []bool
	rejections []rejection
	// A round that only rejected a scope left the drops as they were, and
	// with them what keeping each scope frees (freed, most), and the
	// room: the next round works them out again only when a round kept
	// some (stale).
	stale bool
	freed *freedMemo
	most  int
	// pool holds the scopes that a round's cost test can let through at a
	// room up to poolRoom and a most up to poolMost, highest priority
	// first, each with the least its cost test can give then (so at any
	// most up to poolMost); the rest are leaves too large by far (most of
	// 20,000 memories, with a few tokens left), which a round then does
	// not look at, and a round skips those of the pool too large for what
	// is left of the room without looking up anything of theirs.
	pool               []candidate
	poolRoom, poolMost int
	// probes tells what keeping an item of a list adds, for the drops as
	// they are (see prober); probed is whether it was worked out for them.
	probes *prober
	probed bool
}

type rejection struct{ d, freed, room int }

type candidate struct{ d, low int32 }

// ownCost is d's cost less that of the scopes inside it, which stay
// dropped when it comes back.
func (f *filler) ownCost(d int) int { return f.p.ownCost(d, f.cost) }

// bound is the least keeping d can add: its own count, less what its
// being dropped put in the text (see freedMemo) and the slack. (What a
// render showed keeping one scope adds beyond its count says nothing
// about another's: a heading comes back with the first entry of its
// section only.)
func (f *filler) bound(d int) int { return f.ownCost(d) - f.freed.of(d) - fillSlack }

// adds estimates what keeping d adds: its own count and its share of what
// its parent adds around each child.
func (f *filler) adds(d int) int { return f.ownCost(d) + int(math.Round(f.share(d))) }

// mayFit reports whether dropped scope d may fit in room with e tokens of
// a batch already in it, by its cost and its bound.
func (f *filler) mayFit(d, e, room int) bool {
	p := f.p
	if !p.drop[d] || f.rejected[d] || e+f.cost[d]-f.most-fillSlack > room && p.scopes[d].size == 0 || p.covered(d) {
		return false
	}
	return e+f.bound(d) <= room
}

// reject notes that keeping d would make the prompt size tokens (at
// least, when not exact).
func (f *filler) reject(d, size int, exact bool) {
	p := f.p
	f.rejected[d] = true
	f.rejections = append(f.rejections, rejection{d, f.freed.of(d), f.budget - f.cur.tokens})
	p.need[d] = size
	if !exact {
		if p.atLeast == nil {
			p.atLeast = map[int]bool{}
		}
		p.atLeast[d] = true
	}
}

// refresh works out again what the current drops decide, and lets the
// rejected scopes that may fit now be tried again.
func (f *filler) refresh(room int) {
	p := f.p
	f.freed = p.newFreed(f.rd.counter) // the drops are cur's
	// Most scopes are too large by far: their cost less the most any scope
	// could free is over the room already.
	f.most = f.freed.most()
	f.stale = false
	f.probes, f.probed = nil, false
	w := 0
	for _, r := range f.rejections {
		if f.freed.of(r.d) > r.freed || room > r.room {
			f.rejected[r.d] = false
			delete(p.need, r.d)
			delete(p.atLeast, r.d)
			continue
		}
		f.rejections[w] = r
		w++
	}
	f.rejections = f.rejections[:w]
}

// startProbes makes the probes, which rule out, from one more pass, every
// list item that does not fit by what keeping it adds exactly.
func (f *filler) startProbes() {
	p := f.p
	f.probes, f.probed = f.sr.newProber(f.cur, p.covered), true
	// It may rule out thousands: room for them at once.
	need := make(map[int]int, len(p.need)+len(f.pool))
	maps.Copy(need, p.need)
	p.need = need
}

// refreshPool fills the pool for the room and f.most.
func (f *filler) refreshPool(room int) {
	p := f.p
	if f.pool == nil {
		f.pool = make([]candidate, 0, f.k)
	}
	f.pool, f.poolRoom, f.poolMost = f.pool[:0], room, f.most
	for j := f.k - 1; j >= 0; j-- {
		d := p.order[j]
		low := math.MinInt32
		if p.scopes[d].size == 0 {
			low = max(f.cost[d]-f.most-fillSlack, low)
		}
		if low <= room {
			f.pool = append(f.pool, candidate{int32(d), int32(low)})
		}
	}
}

// nextBatch takes the next batch from the pool: the scopes, highest
// priority first, that may fit together by their estimates. A scope that
// cannot fit on its own is passed over (and one the probes rule out is
// rejected); the batch ends at the first that may fit on its own but
// perhaps not beside the batch, and after one with scopes dropped inside
// it, so that scopes go back highest priority first, each tried before any
// of lower priority.
func (f *filler) nextBatch(room int) []int {
	var batch []int
	est := 0
	for _, c := range f.pool {
		if int(c.low) > room {
			continue
		}
		d := int(c.d)
		if !f.mayFit(d, 0, room) {
			continue
		}
		if pr, ok := f.probes.size(d); ok {
			size := pr.tokens
			if !pr.exact {
				size -= f.freed.of(d)
			}
			if size > f.budget {
				if f.rd.tune.onProbed != nil {
					f.rd.tune.onProbed(d, size, pr.exact)
				}
				f.reject(d, size, pr.exact)
				continue
			}
		}
		if est+int(c.low) > room || est+f.bound(d) > room {
			break
		}
		batch = append(batch, d)
		est += f.adds(d)
		if f.p.dropsIn(d) != nil {
			break
		}
	}
	return batch
}

// settle renders the batch kept; when that is over the budget, it finds
// the longest prefix of the batch that fits, keeps it and rejects the
// scope after it.
func (f *filler) settle(batch []int) error {
	p, budget := f.p, f.budget
	tried := map[int]attempt{}
	try := func(m int) (attempt, error) {
		for i, d := range batch {
			p.drop[d] = i >= m
		}
		if a, ok := tried[m]; ok {
			return a, nil
		}
		if f.rd.tune.onTry != nil {
			f.rd.tune.onTry(-1)
		}
		a, err := f.sr.render()
		tried[m] = a
		return a, err
	}
	a, err := try(len(batch))
	if err != nil {
		return err
	}
	if a.tokens <= budget {
		f.sr.discard(f.cur)
		f.cur, f.stale = a, true
		return nil
	}
	tried[0] = f.cur
	lo, err := f.longestFit(batch, a, try)
	if err != nil {
		return err
	}
	f.reject(batch[lo], tried[lo+1].tokens, true)
	f.stale = lo > 0 // the first lo are kept
	if f.cur, err = try(lo); err != nil {
		return err
	}
	// Only cur's text is wanted from here on.
	for _, a := range tried {
		if a.buf != f.cur.buf {
			f.sr.discard(a)
		}
	}
	return nil
}

// longestFit finds how many scopes from the front of the batch fit, given
// that the whole batch, whole, was over: it guesses where the batch stops
// fitting from how far over it went (leaving out from its end the scopes
// whose counts cover that), gallops from the guess to a bracket, and
// halves it.
func (f *filler) longestFit(batch []int, whole attempt, try func(int) (attempt, error)) (int, error) {
	budget := f.budget
	lo, hi := 0, len(batch) // the first lo fit; the first hi do not
	g, acc := len(batch), 0
	for g > 0 && acc < whole.tokens-budget {
		g--
		acc += f.adds(batch[g])
	}
	if g > lo && g < hi {
		a, err := try(g)
		if err != nil {
			return 0, err
		}
		if a.tokens <= budget {
			lo = g
			for step := 1; hi-lo > 1; step *= 2 {
				next := min(lo+step, hi-1)
				a, err := try(next)
				if err != nil {
					return 0, err
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
					return 0, err
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
			return 0, err
		}
		if a.tokens <= budget {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, nil
}
