package md_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// A fill that runs out of rounds says which dropped scopes it did not try
// though they might have fit, rather than letting the report read as if
// each had been shown not to.
func TestFillOutOfRoundsNamesWhatItDidNotTry(t *testing.T) {
	enc, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	// Hundreds of paragraphs of a few tokens each, of equal priority, so
	// that with little room the fill rejects them one by one. (Not list
	// items: what keeping one of those adds is worked out without a pass.)
	items := []md.Node{md.Named("intro", md.Text(strings.Repeat("Some fixed text. ", 40)))}
	for i := range 400 {
		items = append(items, md.Named(fmt.Sprintf("e%03d", i), md.Textf("note %03d here", i)).Prio(1))
	}
	tree := md.Doc(items...)
	full := enc.Count(md.String(tree))
	hit := false
	for budget := full / 2; budget < full/2+40 && !hit; budget++ {
		res, err := md.NewRenderer(md.WithCounter(enc), md.WithBudget(budget)).Render(tree)
		if err != nil {
			t.Fatal(err)
		}
		if got := enc.Count(res.Text); got > budget {
			t.Fatalf("budget %d: %d tokens", budget, got)
		}
		for _, e := range res.Report.Sections() {
			if !strings.Contains(e.Reason, "stopped before trying it") {
				continue
			}
			hit = true
			if e.Status != md.Dropped || strings.Contains(res.Text, e.Name[1:]+" here") {
				t.Fatalf("budget %d: %s is marked untried but is %s", budget, e.Name, e.Status)
			}
		}
	}
	if !hit {
		t.Fatal("no budget ran the fill out of rounds; the test no longer covers it")
	}
}
