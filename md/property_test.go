package md_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// randomTree builds a prompt-like tree: fixed parts, sections of prioritised
// entries with notices, nested prioritised scopes, and colliding priorities.
// Every scope is named after a word that appears in its text only.
func randomTree(rng *rand.Rand) md.Node {
	n := 0
	word := func() string { n++; return fmt.Sprintf("w%d", n) }
	text := func(w string) md.Node {
		return md.Text(w + strings.Repeat(" x", rng.IntN(12)))
	}
	var parts []md.Node
	for range 1 + rng.IntN(5) {
		switch rng.IntN(4) {
		case 0: // fixed text
			w := word()
			parts = append(parts, md.Named(w, text(w)))
		case 1: // a section of entries that drop from the end, with a notice
			var items []md.Node
			for range 1 + rng.IntN(6) {
				w := word()
				items = append(items, md.Named(w, md.Item(text(w))).Prio(rng.IntN(8)))
			}
			w := word()
			parts = append(parts, md.Named(w, md.Sec(2, "S"+w, md.Raw("intro"), md.Named("", md.UL(items...)).OnDrop(func(k int) md.Node {
				return md.Textf("(%d more)", k)
			}))))
		case 2: // a prioritised scope holding prioritised scopes
			w := word()
			var inner []md.Node
			inner = append(inner, text(w))
			for range rng.IntN(3) {
				v := word()
				inner = append(inner, md.Named(v, text(v)).Prio(rng.IntN(8)))
			}
			parts = append(parts, md.Named(w, inner...).Prio(rng.IntN(8)))
		case 3: // a lone prioritised scope
			w := word()
			parts = append(parts, md.Named(w, text(w)).Prio(rng.IntN(8)))
		}
	}
	return md.Doc(parts...)
}

func hasWord(text, w string) bool {
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\n' || r == '-' || r == '#' || r == '(' || r == ')' }) {
		if f == w || f == "S"+w {
			return true
		}
	}
	return false
}

// For random trees and budgets: the text fits; the report's status for every
// scope matches the text; no dropped scope outranks a kept one (on a tie the
// later one goes first); and the kept set is maximal: keeping the last scope
// dropped as well would not fit.
func TestBudgetProperties(t *testing.T) {
	c := words{}
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tree := randomTree(rng)
		full := md.String(tree)
		budget := 1 + rng.IntN(c.Count(full)+3)
		res, err := md.NewRenderer(md.WithCounter(c), md.WithBudget(budget)).Render(tree)
		over := err != nil
		if err != nil && !strings.Contains(err.Error(), "over the budget") {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !over && c.Count(res.Text) > budget {
			t.Fatalf("seed %d: %d tokens over the budget of %d", seed, c.Count(res.Text), budget)
		}
		if res.Report.Tokens != c.Count(res.Text) {
			t.Fatalf("seed %d: report says %d tokens, text has %d", seed, res.Report.Tokens, c.Count(res.Text))
		}
		type kept struct {
			prio, pos int
			name      string
		}
		var keptP, droppedP []kept
		drop := map[string]bool{}
		truncated := false
		for i, e := range res.Report.Sections() {
			if e.Name == "" || !strings.HasPrefix(e.Name, "w") {
				continue
			}
			in := hasWord(res.Text, e.Name)
			switch e.Status {
			case md.Kept, md.Truncated:
				if !in {
					t.Fatalf("seed %d: %s is %s but not in %q", seed, e.Name, e.Status, res.Text)
				}
				if e.Start >= 0 && !strings.Contains(res.Text[e.Start:e.End], e.Name) {
					t.Fatalf("seed %d: %s located at the wrong place", seed, e.Name)
				}
				if e.Status == md.Truncated {
					truncated = true
				}
				if e.Priority != nil {
					keptP = append(keptP, kept{*e.Priority, i, e.Name})
				}
			case md.Dropped:
				if in {
					t.Fatalf("seed %d: %s is dropped but in %q", seed, e.Name, res.Text)
				}
				if strings.HasPrefix(e.Reason, "dropped to fit") {
					droppedP = append(droppedP, kept{*e.Priority, i, e.Name})
					drop[e.Name] = true
				}
			}
		}
		if over || truncated || len(droppedP) == 0 {
			continue
		}
		// Maximal: keeping any one dropped scope as well would not fit. So a
		// dropped scope that outranks a kept one is always one that did
		// not fit.
		current := md.RenderDropping(tree, c, drop)
		for _, d := range droppedP {
			delete(drop, d.name)
			text := md.RenderDropping(tree, c, drop)
			drop[d.name] = true
			if text == current {
				continue // inside another dropped scope: keeping it alone changes nothing
			}
			if got := c.Count(text); got <= budget {
				t.Fatalf("seed %d: keeping %s (priority %d) too makes %d tokens, within the budget of %d: not maximal\n%s", seed, d.name, d.prio, got, budget, res.Text)
			}
		}
		_ = keptP
	}
}

// A render that reuses cached scopes gives the same text and report as one
// that renders everything, with trees that share some scopes and not others.
func TestCacheGivesTheSameRender(t *testing.T) {
	c := words{}
	cache := md.NewCache()
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 11))
		shared := randomTree(rng)
		for round := range 3 {
			tree := md.Doc(shared, randomTree(rng), md.Named("fresh", md.Textf("round %d", round)))
			want, err1 := md.NewRenderer(md.WithCounter(c)).Render(tree)
			got, err2 := md.NewRenderer(md.WithCounter(c), md.WithCache(cache)).Render(tree)
			if (err1 == nil) != (err2 == nil) || got.Text != want.Text {
				t.Fatalf("seed %d round %d: text differs\n%q\n%q", seed, round, got.Text, want.Text)
			}
			if !sameReport(got.Report, want.Report) {
				t.Fatalf("seed %d round %d: report differs\n%+v\n%+v", seed, round, show(got.Report), show(want.Report))
			}
		}
	}
}

// Budgeted renders that reuse cached scopes give the same text and report
// as ones that render every pass in full.
func TestCacheGivesTheSameBudgetedRender(t *testing.T) {
	c := words{}
	cache := md.NewCache()
	for seed := range uint64(1500) {
		rng := rand.New(rand.NewPCG(seed, 13))
		tree := md.Doc(randomTree(rng), md.Named("fixed", md.Text("a b c"), md.Named("inner", md.Text("d e"))))
		full := c.Count(md.String(tree))
		for range 3 {
			budget := 1 + rng.IntN(full+3)
			want, err1 := md.NewRenderer(md.WithCounter(c), md.WithBudget(budget)).Render(tree)
			for again := range 2 { // the second finds every pass cached
				got, err2 := md.NewRenderer(md.WithCounter(c), md.WithBudget(budget), md.WithCache(cache)).Render(tree)
				if (err1 == nil) != (err2 == nil) || got.Text != want.Text {
					t.Fatalf("seed %d budget %d (%d): text differs\n%q\n%q", seed, budget, again, got.Text, want.Text)
				}
				if !sameReport(got.Report, want.Report) {
					t.Fatalf("seed %d budget %d (%d): report differs\n%+v\n%+v", seed, budget, again, show(got.Report), show(want.Report))
				}
			}
		}
		// and an unbudgeted render in between fills the cache too
		md.NewRenderer(md.WithCounter(c), md.WithCache(cache)).Render(tree)
	}
}

// Budgeted renders through a cache give the same text and report as without
// one when large scopes (whose walks the cache keeps) are shared between
// trees and placed at different depths and positions.
func TestCacheGivesTheSameBudgetedRenderWithLargeScopes(t *testing.T) {
	c := words{}
	cache := md.NewCache()
	// A large scope: a list of entries, and groups of entries in scopes of
	// their own, under a notice that counts every entry dropped in it.
	big := func(rng *rand.Rand, name string) *md.Scope {
		list := func(prefix string, n int) []md.Node {
			var items []md.Node
			for i := range n {
				w := fmt.Sprintf("%s%d", prefix, i)
				items = append(items, md.Named(w, md.Item(md.Text(w+strings.Repeat(" y", rng.IntN(6))))).Prio(rng.IntN(20)))
			}
			return items
		}
		var groups []md.Node
		for g := range 1 + rng.IntN(3) {
			groups = append(groups, md.Named(fmt.Sprintf("%sg%d", name, g), md.Sec(3, "Group", md.UL(list(fmt.Sprintf("%sg%d_", name, g), 1+rng.IntN(8))...))))
		}
		return md.Named(name, md.Sec(2, "Big "+name, md.Named("", md.UL(list(name, 64+rng.IntN(60))...), md.Group(groups)).OnDrop(func(k int) md.Node {
			return md.Textf("(%d more)", k)
		})))
	}
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 17))
		a, b := big(rng, "a"), big(rng, "b")
		for round := range 4 {
			parts := []md.Node{randomTree(rng), a}
			if round%2 == 1 {
				parts = []md.Node{md.Named("wrap", b, randomTree(rng)).Prio(rng.IntN(20)), a}
			} else {
				parts = append(parts, b)
			}
			tree := md.Doc(parts...)
			full := c.Count(md.String(tree))
			budget := 1 + rng.IntN(full+3)
			want, err1 := md.NewRenderer(md.WithCounter(c), md.WithBudget(budget)).Render(tree)
			// Twice: the second render finds every pass of the first in the
			// cache, partly dropped scopes included.
			for again := range 2 {
				got, err2 := md.NewRenderer(md.WithCounter(c), md.WithBudget(budget), md.WithCache(cache)).Render(tree)
				if (err1 == nil) != (err2 == nil) || got.Text != want.Text {
					t.Fatalf("seed %d round %d (%d): text differs\n%q\n%q", seed, round, again, got.Text, want.Text)
				}
				if !sameReport(got.Report, want.Report) {
					t.Fatalf("seed %d round %d (%d): report differs\n%+v\n%+v", seed, round, again, show(got.Report), show(want.Report))
				}
			}
		}
	}
}

// memoryTree is a prompt like the assistant's, with text whose tokens join
// across the seams a budget makes (punctuation, digits, markers): lists of
// prioritised entries under category headings with a notice, an XML
// catalogue of prioritised entries, and fixed text. Every scope has its
// own name.
func memoryTree(rng *rand.Rand) md.Node {
	pieces := []string{"tea", "Tea.", "x/y", "42", "-", "a.b", "(note)", "é", "!", "it's", "--flag", "#", "`code`", "1.5"}
	text := func() string {
		var b strings.Builder
		for i := range 1 + rng.IntN(7) {
			if i > 0 && rng.IntN(4) > 0 {
				b.WriteString(" ")
			}
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	n := 0
	name := func(p string) string { n++; return fmt.Sprintf("%s%d", p, n) }
	var cats []md.Node
	for range 1 + rng.IntN(3) {
		var items []md.Node
		for range 1 + rng.IntN(8) {
			items = append(items, md.Named(name("m"), md.Item(md.Text(text()))).Prio(100+rng.IntN(50)))
		}
		cats = append(cats, md.Sec(3, name("Cat"), md.UL(items...)))
	}
	var skills []md.Node
	for range rng.IntN(6) {
		skills = append(skills, md.Named(name("s"), md.XML("skill", nil, md.XML("name", nil, md.Text(text())), md.XML("description", nil, md.Text(text())))).Prio(rng.IntN(60)))
	}
	return md.Doc(
		md.Named(name("intro"), md.Text(text())),
		md.Named(name("skills"), md.XML("skills", nil, skills...)),
		md.Named(name("memories"), md.Sec(2, "Memory", md.Group(cats))).OnDrop(func(k int) md.Node {
			return md.Textf("%d more memories were left out.", k)
		}),
		md.Named(name("rule"), md.Text(text())).Prio(rng.IntN(200)),
	)
}

// With an exact encoding, whose tokens can join across the places scopes
// are dropped from: the text fits, and the kept set is maximal: keeping any
// one scope that was dropped to fit, with everything around it kept, makes
// a prompt over the budget.
func TestBudgetIsMaximalWithAnExactEncoding(t *testing.T) {
	testBudgetIsMaximal(t, false)
}

// The same with a fill's probes from its first round on: each list item
// they rule out, without a pass, must not fit when rendered, and the size
// they report for it is over the budget.
func TestBudgetIsMaximalWithProbes(t *testing.T) {
	probed, exact := 0, 0
	probes := []md.Option{md.WithSizeAfter(0), md.WithOnProbed(func(_, _ int, isExact bool) {
		probed++
		if isExact {
			exact++
		}
	})}
	testBudgetIsMaximal(t, false, probes...)
	// Again over a cache, rendering each tree twice: the second render's
	// tracking passes take what the first's saw from the cache.
	testBudgetIsMaximal(t, true, probes...)
	if probed == 0 || exact == 0 {
		t.Fatalf("probes ruled out %d scopes (%d of them exactly): the test no longer covers them", probed, exact)
	}
	t.Logf("probes ruled out %d scopes, %d exactly", probed, exact)
}

func testBudgetIsMaximal(t *testing.T, cached bool, extra ...md.Option) {
	c, err := tokens.Uncached(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	// Seed 8818 keeps a memory that fits only once a sibling is kept too,
	// when the notice for the last one dropped goes with it.
	for _, seed := range append(seedsUpTo(1000), 8818) {
		rng := rand.New(rand.NewPCG(seed, 23))
		tree := memoryTree(rng)
		full := c.Count(md.String(tree))
		budget := 1 + rng.IntN(full+3)
		opts := append([]md.Option{md.WithCounter(exact), md.WithBudget(budget)}, extra...)
		if cached {
			opts = append(opts, md.WithCache(md.NewCache()))
		}
		rd := md.NewRenderer(opts...)
		res, err := rd.Render(tree)
		if err != nil {
			continue // over budget with everything droppable dropped
		}
		if cached {
			again, err := rd.Render(tree)
			if err != nil || again.Text != res.Text || !sameReport(again.Report, res.Report) {
				t.Fatalf("seed %d budget %d: rendered again over the cache: %v\n%q\n%q", seed, budget, err, again.Text, res.Text)
			}
			// Then the same scopes behind one more, so that each has
			// another plan index than what the cache saw.
			tree = md.Doc(md.Named("lead", md.Text("Lead.")), tree)
			if res, err = rd.Render(tree); err != nil {
				continue
			}
		}
		if got := c.Count(res.Text); got > budget || got != res.Report.Tokens {
			t.Fatalf("seed %d: %d tokens (report %d), budget %d", seed, got, res.Report.Tokens, budget)
		}
		drop := map[string]bool{}
		var direct []string
		for _, e := range res.Report.Sections() {
			if e.Status == md.Dropped {
				drop[e.Name] = true
				if strings.HasPrefix(e.Reason, "dropped to fit") {
					direct = append(direct, e.Name)
				}
			}
		}
		if got := md.RenderDropping(tree, c, drop); got != res.Text {
			t.Fatalf("seed %d: the report's drops render\n%q\nnot\n%q", seed, got, res.Text)
		}
		for _, name := range direct {
			delete(drop, name)
			text := md.RenderDropping(tree, c, drop)
			drop[name] = true
			if text == res.Text {
				continue // inside a scope that stays dropped
			}
			got := c.Count(text)
			if got <= budget {
				t.Fatalf("seed %d budget %d: keeping %s as well makes %d tokens: not maximal\n%s", seed, budget, name, got, text)
			}
			for _, e := range res.Report.Sections() {
				if e.Name != name || !strings.Contains(e.Reason, "keeping it would make the prompt ") {
					continue
				}
				var size int
				atLeast := strings.Contains(e.Reason, "prompt at least ")
				if _, err := fmt.Sscanf(e.Reason[strings.Index(e.Reason, "prompt ")+len("prompt "):], map[bool]string{true: "at least %d", false: "%d"}[atLeast], &size); err != nil {
					t.Fatalf("seed %d: reason %q: %v", seed, e.Reason, err)
				}
				// The size is from when the scope was tried (what was kept
				// or dropped after that may move it either way), but it
				// was over the budget.
				if size <= budget {
					t.Fatalf("seed %d budget %d: the report says keeping %s makes %d tokens (%q); it makes %d", seed, budget, name, size, e.Reason, got)
				}
			}
		}
	}
}

// seedsUpTo returns the seeds 0 to n-1.
func seedsUpTo(n uint64) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i)
	}
	return s
}
