package md_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// The reference solver: the budget's contract written out the plain way,
// with no estimate, no bracket search, no cache and no bound that skips a
// render. It renders each drop set it considers in full (through
// md.RenderDropping, which renders a fixed drop set and searches nothing)
// and counts the whole text.
//
//  1. The drop order is every prioritised scope, lowest priority first and,
//     among equals, the later in the document first.
//  2. The cut is the fewest scopes, from the front of that order, whose
//     dropping makes the prompt fit, tried one by one from none.
//  3. Then, again and again, the dropped scope of highest priority (the
//     last in the drop order) that is not inside another dropped scope and
//     whose keeping still fits is kept, until keeping any one such scope
//     would go over the budget. A scope inside a dropped one is tried once
//     that one is kept: keeping it alone would change nothing.
//
// It returns the text and the names of the scopes dropped, or ok false
// when even dropping everything droppable does not fit.
func referenceSolve(tree md.Node, c md.Counter, budget int) (text string, dropped []string, ok bool) {
	order, outer := dropOrder(tree)
	drop := map[string]bool{}
	render := func() (string, int) {
		t := md.RenderDropping(tree, c, drop)
		return t, c.Count(t)
	}
	text, n := render()
	cut := 0
	for n > budget {
		if cut == len(order) {
			return text, nil, false
		}
		drop[order[cut]] = true
		cut++
		text, n = render()
	}
	covered := func(name string) bool {
		return slices.ContainsFunc(outer[name], func(o string) bool { return drop[o] })
	}
	for {
		kept := false
		for i := cut - 1; i >= 0 && !kept; i-- {
			name := order[i]
			if !drop[name] || covered(name) {
				continue
			}
			delete(drop, name)
			t, m := render()
			if m > budget {
				drop[name] = true
				continue
			}
			text, kept = t, true
		}
		if !kept {
			break
		}
	}
	for _, name := range order {
		if drop[name] {
			dropped = append(dropped, name)
		}
	}
	return text, dropped, true
}

// dropOrder lists the prioritised scopes of tree by name, in the order a
// budget drops them (see referenceSolve), and for each the names of the
// scopes around it. It walks the node types the
// reference trees use, on its own, so that it shares nothing with the
// planner it checks.
func dropOrder(tree md.Node) (names []string, outer map[string][]string) {
	type entry struct {
		name      string
		prio, pos int
	}
	var all []entry
	outer = map[string][]string{}
	var around []string
	var walk func(n md.Node)
	walkAll := func(ns []md.Node) {
		for _, c := range ns {
			walk(c)
		}
	}
	walk = func(n md.Node) {
		switch n := n.(type) {
		case *md.Scope:
			if n.Prioritized {
				all = append(all, entry{n.Name, n.Priority, len(all)})
				outer[n.Name] = slices.Clone(around)
			}
			around = append(around, n.Name)
			walkAll(n.Children)
			around = around[:len(around)-1]
		case md.Group:
			walkAll(n)
		case *md.Block:
			walkAll(n.Children)
		case *md.Section:
			walk(n.Heading)
			walkAll(n.Body)
		case *md.List:
			walkAll(n.Items)
		case *md.XMLElement:
			walkAll(n.Children)
		case *md.Heading:
			walkAll(n.Children)
		case md.Text, md.Raw, nil:
		default:
			panic(fmt.Sprintf("dropOrder: no case for %T", n))
		}
	}
	walk(tree)
	slices.SortStableFunc(all, func(a, b entry) int {
		if a.prio != b.prio {
			return a.prio - b.prio
		}
		return b.pos - a.pos // the later of equals goes first
	})
	names = make([]string, len(all))
	for i, e := range all {
		names[i] = e.name
	}
	return names, outer
}

// oracleTrees is how many random trees TestBudgetAgreesWithTheReference
// checks: small trees, so that the reference's pass per drop set stays
// cheap.
const oracleTrees = 10_000

// The budgeted renderer gives the reference solver's prompt, byte for
// byte, on random small trees (memoryTree's and randomTree's shapes) under
// the o200k_base encoding and random budgets: the same cut, the same scopes
// kept back, and the report drops exactly the scopes the reference drops.
func TestBudgetAgreesWithTheReference(t *testing.T) {
	exact, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	trees := oracleTrees
	if testing.Short() {
		trees = 1000
	}
	stood := 0
	for seed := range uint64(trees) {
		rng := rand.New(rand.NewPCG(seed, 41))
		var tree md.Node
		if seed%2 == 0 {
			tree = memoryTree(rng)
		} else {
			tree = randomTree(rng)
		}
		full := exact.Count(md.String(tree))
		budget := 1 + rng.IntN(full+3)
		want, wantDropped, ok := referenceSolve(tree, exact, budget)
		res, err := md.NewRenderer(md.WithCounter(exact), md.WithBudget(budget)).Render(tree)
		if !ok {
			if err == nil {
				t.Fatalf("seed %d budget %d: the reference finds no fit, the renderer gives\n%q", seed, budget, res.Text)
			}
			continue
		}
		if err != nil {
			t.Fatalf("seed %d budget %d: %v; the reference fits\n%q", seed, budget, err, want)
		}
		if res.Text != want {
			t.Fatalf("seed %d budget %d: the renderer gives (%d tokens)\n%q\nthe reference (%d tokens)\n%q",
				seed, budget, exact.Count(res.Text), res.Text, exact.Count(want), want)
		}
		if res.Report.Tokens != exact.Count(res.Text) {
			t.Fatalf("seed %d budget %d: the report says %d tokens, the text has %d", seed, budget, res.Report.Tokens, exact.Count(res.Text))
		}
		// With a cache, as a builder renders: the second render finds
		// every scope there, and its passes size (every scope stands in).
		if seed%4 == 0 {
			cache := md.NewCache()
			for again := range 2 {
				res, err := md.NewRenderer(md.WithCounter(exact), md.WithBudget(budget), md.WithCache(cache), md.WithStandMin(1), md.WithOnStands(func(n int) { stood += n })).Render(tree)
				if err != nil || res.Text != want || res.Report.Tokens != exact.Count(want) {
					t.Fatalf("seed %d budget %d, cached (%d): %v; the renderer gives (%d tokens, report %d)\n%q\nthe reference\n%q",
						seed, budget, again, err, exact.Count(res.Text), res.Report.Tokens, res.Text, want)
				}
			}
		}
		// Every scope the reference dropped is reported dropped.
		status := map[string]md.Status{}
		for _, e := range res.Report.Sections() {
			status[e.Name] = e.Status
		}
		for _, name := range wantDropped {
			if status[name] != md.Dropped {
				t.Fatalf("seed %d budget %d: the reference drops %s, the report says %q", seed, budget, name, status[name])
			}
		}
	}
	if stood == 0 {
		t.Fatal("no cached render's pass wrote a stand-in")
	}
}
