package md_test

import (
	"slices"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// TestChildrenInRenderOrder checks md.Children against the renderer on a
// tree with every kind of node that holds others: the named scopes found
// by walking it are those the report lists, in the same (document) order.
// A TitledList's items past its Max are not rendered, so not walked.
func TestChildrenInRenderOrder(t *testing.T) {
	n := 0
	s := func() *md.Scope {
		n++
		name := string(rune('a' + n - 1))
		return md.Named(name, md.Text(name+" text"))
	}
	tree := md.Doc(
		md.Group{s(), md.Group{s()}},
		md.Sec(2, "Section", s(), md.Lines(s(), s())),
		&md.Section{Heading: md.Title(2, s()), Body: []md.Node{s()}},
		md.Span(md.Bold(s()), md.Italic(s()), md.Link("https://example.com", s())),
		md.UL(md.Item(s()), md.OL(md.Item(s()))),
		&md.TitledList{Title: s(), Max: 1, Items: []md.Node{s(), md.Named("hidden", md.Text("past Max"))}},
		md.XML("x", []md.Attr{{Name: "k", Value: "v"}}, s(), md.XML("y", nil, s())),
		md.Quote(s()),
		&md.Table{Header: []md.Node{s(), s()}, Rows: [][]md.Node{{s(), s()}, {s(), s()}}},
		md.Named("outer", s(), md.Named("inner", s())).Prio(1),
		md.Title(3, s()),
		nil, (*md.Scope)(nil), md.Text("leaf"), md.Code("x"), md.Fence("", "code"),
	)
	var walked []string
	var walk func(md.Node)
	walk = func(n md.Node) {
		if sc, ok := n.(*md.Scope); ok && sc != nil {
			walked = append(walked, sc.Name)
		}
		for c := range md.Children(n) {
			walk(c)
		}
	}
	walk(tree)
	// Without a budget the report is made from the renderer's records;
	// with one that keeps everything, the planner (which walks the tree
	// through md.Children) has to find each scope the renderer meets.
	c, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range []*md.Renderer{md.NewRenderer(), md.NewRenderer(md.WithCounter(c), md.WithBudget(100_000))} {
		res, err := rd.Render(tree)
		if err != nil {
			t.Fatal(err)
		}
		var reported []string
		for _, e := range res.Report.Sections() {
			reported = append(reported, e.Name)
		}
		if !slices.Equal(walked, reported) {
			t.Errorf("walked  %v\nreport %v", walked, reported)
		}
	}
	if len(walked) != n+2 { // every s() and outer, inner; not "hidden"
		t.Errorf("walked %d scopes, want %d: %v", len(walked), n+2, walked)
	}
}

// TestChildrenStops checks that a walk stops when its loop does.
func TestChildrenStops(t *testing.T) {
	tbl := &md.Table{Header: []md.Node{md.Text("h")}, Rows: [][]md.Node{{md.Text("a"), md.Text("b")}, {md.Text("c")}}}
	var seen []md.Node
	for c := range md.Children(tbl) {
		seen = append(seen, c)
		if len(seen) == 2 {
			break
		}
	}
	if len(seen) != 2 || seen[1] != md.Text("a") {
		t.Errorf("seen %v", seen)
	}
}
