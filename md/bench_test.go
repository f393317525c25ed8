package md_test

import (
	"fmt"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// bigTree is a realistic prompt of about 5,000 nodes: 200 sections, each
// with prose, a nested list and an XML block. A third of the sections carry
// a priority so that a budget can drop them.
func bigTree() (md.Node, int) {
	var sections []md.Node
	nodes := 0
	for i := range 200 {
		var items []md.Node
		for j := range 4 {
			items = append(items, md.Item(md.Bold(md.Textf("rule %d.%d", i, j)), md.Text(": keep answers short and cite the query that produced each number."),
				md.UL(md.Item(md.Code("columns.md")), md.Item(md.Textf("table t%d_%d", i, j)))))
			nodes += 10
		}
		sec := md.Sec(2, fmt.Sprintf("Section %d", i),
			md.P(md.Textf("Section %d explains how the agent should treat the files under folder %d, and why.", i, i)),
			md.UL(items...),
			md.XML("skill", []md.Attr{{Name: "available", Value: "true"}},
				md.XML("name", nil, md.Textf("skill-%d", i)),
				md.XML("description", nil, md.Text("Reads <files> & summarises them for the user.")),
			),
		)
		nodes += 10
		s := md.Named(fmt.Sprintf("section-%d", i), sec)
		if i%3 != 0 {
			s.Prio(i)
		}
		sections = append(sections, s)
	}
	return md.Doc(sections...), nodes
}

func BenchmarkRender(b *testing.B) {
	tree, _ := bigTree()
	r := md.NewRenderer(md.WithCounter(mustCounter(b)))
	if _, err := r.Render(tree); err != nil { // warm the token cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(tree); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderString(b *testing.B) {
	tree, _ := bigTree()
	b.ReportAllocs()
	for b.Loop() {
		_ = md.String(tree)
	}
}

// BenchmarkRenderBudget drops about 30% of the sections.
func BenchmarkRenderBudget(b *testing.B) {
	tree, _ := bigTree()
	c := mustCounter(b)
	full, err := md.NewRenderer(md.WithCounter(c)).Render(tree)
	if err != nil {
		b.Fatal(err)
	}
	r := md.NewRenderer(md.WithCounter(c), md.WithBudget(full.Report.Tokens*7/10))
	res, err := r.Render(tree)
	if err != nil {
		b.Fatal(err)
	}
	dropped := 0
	for _, e := range res.Report.Sections() {
		if e.Status == md.Dropped {
			dropped++
		}
	}
	b.ReportMetric(float64(dropped), "dropped")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(tree); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBigTreeSize(t *testing.T) {
	_, n := bigTree()
	if n < 5000 {
		t.Errorf("benchmark tree has %d nodes, want at least 5000", n)
	}
}

func mustCounter(b *testing.B) md.Counter {
	c, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
