package md

import "fmt"

// RenderDropping renders n with exactly the named scopes dropped, for tests
// that check a budgeted render against the renders it chose between.
func RenderDropping(n Node, c Counter, drop map[string]bool) string {
	p := newPlan(n, nil)
	for i, si := range p.scopes {
		p.drop[i] = drop[si.s.Name]
	}
	text, _, _ := (&Renderer{counter: c, tune: defaultTuning}).pass(n, p)
	return text
}

// WithStandMin sets the shortest text a sizing pass writes as a
// stand-in, and WithOnStands an observer told how many each wrote.
func WithStandMin(n int) Option          { return func(r *Renderer) { r.tune.standMin = n } }
func WithOnStands(fn func(n int)) Option { return func(r *Renderer) { r.tune.onStands = fn } }

// WithSizeAfter sets the fill round from which passes size and probes run,
// and WithOnProbed an observer told of every scope a probe ruled out.
func WithSizeAfter(n int) Option {
	return func(r *Renderer) { r.tune.sizeAfter, r.tune.probeAfter = n, n }
}
func WithOnProbed(fn func(idx, size int, exact bool)) Option {
	return func(r *Renderer) { r.tune.onProbed = fn }
}

// LeanRecordsDiffer renders n with the prioritised scopes dropped that
// dropA picks (asked once per such scope, in plan order) over cache; then lean (which finds
// the scopes whose drops stayed as blocks, and renders the others again)
// and in full (which finds what the lean pass cached) with those dropB
// picks. It describes the first record where either pass's records, with
// a lean pass's blocks put back, differ from those of a pass without a
// cache, or returns "".
func LeanRecordsDiffer(n Node, c Counter, cache *Cache, dropA, dropB func(name string) bool) string {
	pick := func(drop func(string) bool) []bool {
		var drops []bool
		for _, si := range newPlan(n, nil).scopes {
			drops = append(drops, si.s.Prioritized && drop(si.s.Name))
		}
		return drops
	}
	render := func(cache *Cache, drops []bool, lean bool) (string, []rec) {
		rd := &Renderer{counter: c, cache: cache, hasBudget: true, tune: defaultTuning}
		p := newPlan(n, cache)
		copy(p.drop, drops)
		buf, recs, blocks, err := rd.passBuf(n, p, lean)
		defer putBuf(buf)
		if err != nil {
			return "error: " + err.Error(), nil
		}
		return string(*buf), expand(recs, blocks)
	}
	a, b := pick(dropA), pick(dropB)
	render(cache, a, false)
	text, want := render(nil, b, false)
	for i, lean := range []bool{true, false} {
		got, recs := render(cache, b, lean)
		if got != text {
			return fmt.Sprintf("pass %d: text differs:\n%q\n%q", i, got, text)
		}
		if len(recs) != len(want) {
			return fmt.Sprintf("pass %d: %d records, want %d", i, len(recs), len(want))
		}
		for j := range recs {
			a, b := recs[j], want[j]
			if a.scope != b.scope || a.idx != b.idx || a.depth != b.depth || a.text != b.text || a.at != b.at ||
				a.tokens != b.tokens || a.gone != b.gone || a.emptied != b.emptied || (a.cut == nil) != (b.cut == nil) ||
				a.inside != b.inside && a.inside != 0 && b.inside != 0 {
				return fmt.Sprintf("pass %d: record %d (%s) differs:\n%+v\n%+v", i, j, a.scope.Name, a, b)
			}
		}
	}
	return ""
}
