package md_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// plainCounter hides everything but Count, so the renderer counts every
// text whole.
type plainCounter struct{ c md.Counter }

func (p plainCounter) Count(s string) int { return p.c.Count(s) }

// o200k returns the o200k_base encoding three ways: as loom uses it
// (cached, and composing counts where they add), uncached, and counting
// every text whole.
func o200k(t *testing.T) (exact, raw tokens.Counter, whole plainCounter) {
	t.Helper()
	exact, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	raw, err = tokens.Uncached(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return exact, raw, plainCounter{raw}
}

// lines makes multi-line text of the kinds that decide where counts add:
// indented lines, punctuation before newlines, "/" at a line start, blank
// lines, non-ASCII white space.
func lines(rng *rand.Rand, w string) string {
	pieces := []string{"word", "Word.", "x/y", "/path", "  indented", "\tTab", "- item", "## Head", "'s", "123", "a.\n", "\u00a0nbsp", "😀", "<tag>", "end!"}
	var b strings.Builder
	b.WriteString(w)
	for range rng.IntN(8) {
		if rng.IntN(3) == 0 {
			b.WriteString("\n")
			if rng.IntN(4) == 0 {
				b.WriteString("\n")
			}
		} else {
			b.WriteString(" ")
		}
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// lineTree is a prompt-like tree whose scopes hold multi-line text, in
// layouts that keep a scope's text as it is (documents, sections) and ones
// that reshape it (lists, XML, quotes).
func lineTree(rng *rand.Rand, depth int) md.Node {
	n := 0
	word := func() string { n++; return fmt.Sprintf("w%d_%d", depth, n) }
	var parts []md.Node
	for range 1 + rng.IntN(5) {
		w := word()
		text := lines(rng, w)
		if rng.IntN(4) == 0 {
			// A start where counts may not add: the cut before the
			// scope's text is then not one.
			text = []string{"/", "  ", "\u00a0", "😀", "\n", ".", "'s "}[rng.IntN(7)] + text
		}
		var child md.Node = md.Text(text)
		if depth < 2 && rng.IntN(3) == 0 {
			child = md.Group{child, lineTree(rng, depth+1)}
		}
		switch rng.IntN(7) {
		case 6:
			// Inline, after text on the same line.
			parts = append(parts, md.P(md.Text("lead "), md.Named(w, child).Prio(rng.IntN(8))))
		case 0:
			parts = append(parts, md.Named(w, md.UL(md.Item(child))).Prio(rng.IntN(8)))
		case 1:
			parts = append(parts, md.Named(w, md.XML("x", nil, child)))
		case 2:
			parts = append(parts, md.Named(w, md.Sec(2, "S"+w, child)).Prio(rng.IntN(8)))
		case 3:
			parts = append(parts, md.Named(w, md.Quote(child)))
		default:
			parts = append(parts, md.Named(w, child).Prio(rng.IntN(8)))
		}
	}
	if rng.IntN(2) == 0 {
		return md.Doc(parts...)
	}
	return md.Lines(parts...)
}

// Counting a scope from the counts of the scopes inside it gives exactly
// what counting its text whole gives: same report, every figure, with and
// without a cache, with and without a budget.
func TestComposedCountsAreExact(t *testing.T) {
	exact, raw, whole := o200k(t)
	cache := md.NewCache()
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 17))
		tree := lineTree(rng, 0)
		full := raw.Count(md.String(tree))
		for _, budget := range []int{0, 1 + rng.IntN(full+3)} {
			opts := func(c md.Counter, more ...md.Option) []md.Option {
				o := []md.Option{md.WithCounter(c)}
				if budget > 0 {
					o = append(o, md.WithBudget(budget))
				}
				return append(o, more...)
			}
			want, err1 := md.NewRenderer(opts(whole)...).Render(tree)
			for _, got := range []struct {
				name string
				r    *md.Renderer
			}{
				{"composed", md.NewRenderer(opts(exact)...)},
				{"composed, cached", md.NewRenderer(opts(exact, md.WithCache(cache))...)},
				{"composed, cached again", md.NewRenderer(opts(exact, md.WithCache(cache))...)},
			} {
				res, err2 := got.r.Render(tree)
				if (err1 == nil) != (err2 == nil) || res.Text != want.Text {
					t.Fatalf("seed %d budget %d %s: text differs\n%q\n%q", seed, budget, got.name, res.Text, want.Text)
				}
				if !sameReport(res.Report, want.Report) {
					t.Fatalf("seed %d budget %d %s: report differs\n%+v\n%+v", seed, budget, got.name, show(res.Report), show(want.Report))
				}
			}
		}
	}
}

// A budget's first pass, which drops nothing, writes the large scopes it
// finds whole in the cache at the top of the tree as stand-ins and counts
// the prompt from their counts: every figure is what counting the whole
// text gives, at budgets around the prompt's size too (where the first
// pass is the answer, and is rendered again in full). With every scope
// large enough to stand in, and trees wrapped in layouts that reshape
// their text (which must not stand in).
func TestSizingPassCountsExactly(t *testing.T) {
	stood := 0
	sizing := []md.Option{md.WithStandMin(1), md.WithOnStands(func(n int) { stood += n })}
	exact, raw, whole := o200k(t)
	cache := md.NewCache()
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 29))
		tree := lineTree(rng, 0)
		switch rng.IntN(5) {
		case 0:
			tree = md.Doc(tree, md.Quote(lineTree(rng, 1)))
		case 1:
			tree = &md.Block{Sep: "\n", Indent: "  ", Children: []md.Node{tree}}
		case 2:
			tree = md.Group{md.Lines(tree, md.Named("tail", md.Text(lines(rng, "tail")))), md.XML("x", nil, lineTree(rng, 1))}
		}
		full := raw.Count(md.String(tree))
		for _, budget := range []int{max(full-1, 1), full, full + 1, 1 + rng.IntN(full+3)} {
			want, err1 := md.NewRenderer(md.WithCounter(whole), md.WithBudget(budget)).Render(tree)
			for again := range 2 { // the second finds every scope cached
				res, err2 := md.NewRenderer(append(sizing, md.WithCounter(exact), md.WithBudget(budget), md.WithCache(cache))...).Render(tree)
				if (err1 == nil) != (err2 == nil) || res.Text != want.Text {
					t.Fatalf("seed %d budget %d (%d): text differs\n%q\n%q", seed, budget, again, res.Text, want.Text)
				}
				if !sameReport(res.Report, want.Report) {
					t.Fatalf("seed %d budget %d (%d): report differs\n%+v\n%+v", seed, budget, again, show(res.Report), show(want.Report))
				}
			}
		}
	}
	if stood == 0 {
		t.Fatal("no sizing pass wrote a stand-in")
	}
}
