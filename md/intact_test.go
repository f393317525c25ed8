package md_test

import (
	"fmt"
	"testing"

	"github.com/loomctx/loom/md"
)

// A scope with droppable scopes inside, cached whole by the search's first
// pass (which drops nothing), must not be reused by a later pass that drops
// some of them, nor by the next render's passes: each budgeted render with
// the cache gives the text and report of one without it.
func TestCachedListOfDroppablesIsReusedOnlyWhole(t *testing.T) {
	c := words{}
	cache := md.NewCache()
	var items []md.Node
	for i := range 40 {
		items = append(items, md.Named(fmt.Sprintf("m%d", i), md.Item(md.Textf("memory %d says w x y z", i))).Prio(10+i))
	}
	mems := md.Named("memories", md.Sec(2, "Notes", md.UL(items...))).OnDrop(func(n int) md.Node {
		return md.Textf("(%d left out)", n)
	})
	for round := range 4 {
		tree := md.Doc(md.Named("intro", md.Textf("round %d", round%2)), mems)
		full := c.Count(md.String(tree))
		for _, budget := range []int{full + 5, full - 3, full / 2, 20, full / 3} {
			want, err1 := md.NewRenderer(md.WithCounter(c), md.WithBudget(budget)).Render(tree)
			got, err2 := md.NewRenderer(md.WithCounter(c), md.WithBudget(budget), md.WithCache(cache)).Render(tree)
			if (err1 == nil) != (err2 == nil) || got.Text != want.Text {
				t.Fatalf("round %d budget %d: text differs\n got %q\nwant %q", round, budget, got.Text, want.Text)
			}
			if !sameReport(got.Report, want.Report) {
				t.Fatalf("round %d budget %d: report differs\n got %+v\nwant %+v", round, budget, show(got.Report), show(want.Report))
			}
			if budget < full && len(got.Text) >= len(md.String(tree)) {
				t.Fatalf("round %d budget %d: nothing was dropped", round, budget)
			}
		}
	}
}
