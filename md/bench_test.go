package md_test

import (
	"fmt"
	"strings"
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
			s = s.Prio(i)
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

// editedPrompt is a prompt shaped like an assistant's on the generator's
// large workspace (about 120 KB): five long files, a memory section of 42
// entries, and a catalogue of 248 entries in an XML element with a memo.
// edit(k) returns the tree with entry 124 replaced by a new scope, whose
// text is one of two versions by k's parity, as a watched builder makes
// after one skill file was edited; every other scope is the same value.
func editedPrompt() (edit func(k int) md.Node) {
	line := "Keep answers short; cite the file and the line each claim comes from, and say when unsure.\n"
	file := func(name string, n int) *md.Scope {
		return md.Named(name, md.Sec(2, name, md.Text(strings.Repeat(line, n)))).From(name + ".md")
	}
	files := md.Named("bootstrap", file("AGENTS", 90), file("SOUL", 85), file("USER", 90), file("TOOLS", 88))
	var mems []md.Node
	for i := range 42 {
		mems = append(mems, md.Named(fmt.Sprintf("memory/m%d", i), md.Item(md.Textf("memory %d: %s", i, strings.Repeat("the user prefers terse replies ", 11)))).Prio(2000+i))
	}
	memory := md.Named("memory", md.Sec(1, "Memory", md.UL(mems...)))
	entry := func(i int, desc string) *md.Scope {
		return md.Named(fmt.Sprintf("skill:s%d", i), md.XML("skill", []md.Attr{{Name: "available", Value: "true"}},
			md.XML("name", nil, md.Textf("skill-%03d", i)),
			md.XML("description", nil, md.Text(desc)),
			md.XML("location", nil, md.Textf("skills/skill-%03d/SKILL.md", i)),
		)).Prio(4000 + i).From(fmt.Sprintf("skills/skill-%03d/SKILL.md", i))
	}
	entries := make([]md.Node, 248)
	for i := range entries {
		entries[i] = entry(i, "Reads the workspace's <files> & summarises them for the user, in a few lines.")
	}
	memo := md.NewXMLMemo()
	identity := md.Named("identity", md.Sec(1, "Identity", md.Text(strings.Repeat(line, 12))))
	return func(k int) md.Node {
		list := append([]md.Node(nil), entries...)
		list[124] = entry(124, fmt.Sprintf("Edited %d times: reads the workspace's files.", k%2))
		skills := md.Named("skills", md.Sec(1, "Skills", md.Named("", md.Raw("Skills you can read:"), md.XML("skills", nil, list...).Memo(memo))))
		return md.Doc(identity, files, memory, skills)
	}
}

// BenchmarkRerenderCatalogue renders a large prompt again after one entry
// of its catalogue changed, through a cache and the catalogue's memo: md's
// part of a watched builder's re-render after one skill file was edited.
func BenchmarkRerenderCatalogue(b *testing.B) {
	edit := editedPrompt()
	r := md.NewRenderer(md.WithCounter(mustCounter(b)), md.WithCache(md.NewCache()))
	for k := range 2 {
		if _, err := r.Render(edit(k)); err != nil {
			b.Fatal(err)
		}
	}
	trees := [2]md.Node{edit(0), edit(1)}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		k++
		// A new tree each time, as a builder makes: the edited entry is a
		// new scope, so the memo and the cache see one change.
		trees[k%2] = edit(k)
		if _, err := r.Render(trees[k%2]); err != nil {
			b.Fatal(err)
		}
	}
}
