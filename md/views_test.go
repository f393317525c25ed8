package md_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// bigScope is a named scope whose text is long enough that a render
// through a cache keeps it as a view of the render's buffer rather than a
// copy (a few kilobytes), with a nested scope of its own.
func bigScope(rng *rand.Rand, name string) *md.Scope {
	var b strings.Builder
	for i := range 300 + rng.IntN(300) {
		fmt.Fprintf(&b, "%s line %d", name, i)
		if rng.IntN(9) == 0 {
			b.WriteString(" | cell\n") // a table cell and a heading change these
		} else {
			b.WriteByte('\n')
		}
	}
	inner := md.Named(name+"-inner", md.Text(strings.Repeat(name+" inner words\n", 100+rng.IntN(400))))
	// Enough scopes inside that the cache keeps the pass's records of
	// them rather than a copy.
	many := md.Lines()
	for i := range 70 {
		many.Children = append(many.Children, md.Named(fmt.Sprintf("%s-%d", name, i), md.Textf("%s item %d", name, i)))
	}
	s := md.Named(name, md.Text(strings.TrimSuffix(b.String(), "\n")), inner, many)
	if rng.IntN(5) == 0 {
		s = s.Truncate(200 + rng.IntN(2000)) // its own cap cuts what is inside it
	}
	return s
}

// place puts n inside a node that writes what its children wrote again
// (indents, prefixes, cuts, joins lines) or one that leaves it as it is.
func place(rng *rand.Rand, n md.Node, memo, outer, inner *md.XMLMemo) md.Node {
	switch rng.IntN(13) {
	case 0:
		return md.UL(md.Item(md.Text("first")), n, md.Item(md.Text("last")))
	case 1:
		return md.Quote(n)
	case 2:
		return &md.Block{Sep: "\n", Prefix: "> ", Indent: "  ", Children: []md.Node{n}}
	case 3:
		return md.XML("plain", nil, n, md.Text("tail"))
	case 4:
		return md.Title(2, md.Text("T"), n)
	case 5:
		return &md.TitledList{Title: n, Max: 2}
	case 6:
		return &md.Table{Header: []md.Node{md.Text("h")}, Rows: [][]md.Node{{n}}}
	case 7:
		x := md.XML("memo", nil, n)
		if s, ok := n.(*md.Scope); ok && memo != nil {
			x = md.XML("memo", nil, s, md.Named("next", md.Text("next\nentry")))
			x = x.Memo(memo)
		}
		return x
	case 8:
		return md.Sec(1, "Section", md.Raw("intro"), n)
	case 10:
		// An element with a memo inside a child of another: the inner one
		// is rendered aside, then written again indented.
		if s, ok := n.(*md.Scope); ok {
			in := md.XML("inner", nil, s, md.Named("x", md.Text("x\ny"))).Memo(inner)
			return md.XML("outer", nil, md.Named("wrap", in), md.Named("y", md.Text("y\nz"))).Memo(outer)
		}
	case 9:
		return md.Named("outer", md.Text("before"), n).Truncate(300 + rng.IntN(3000))
	}
	return md.Named("plain", n)
}

// Renders through a cache, where long texts are views of each render's
// buffer, give what renders without one give, wherever the long scopes sit
// (inside nodes that write their content again, or not) and however they
// are shared between renders; and a result stays what it was after later
// renders.
func TestViewsOfTheBufferGiveTheSameRender(t *testing.T) {
	c := words{}
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 31))
		cache, memo, outer, inner := md.NewCache(), md.NewXMLMemo(), md.NewXMLMemo(), md.NewXMLMemo()
		pool := []*md.Scope{bigScope(rng, "a"), bigScope(rng, "b"), bigScope(rng, "c")}
		type kept struct {
			res  md.Result
			text string
		}
		var earlier []kept
		for round := range 6 {
			if rng.IntN(2) == 0 {
				pool[rng.IntN(len(pool))] = bigScope(rng, fmt.Sprintf("r%d", round))
			}
			var parts []md.Node
			for range 1 + rng.IntN(4) {
				parts = append(parts, place(rng, pool[rng.IntN(len(pool))], memo, outer, inner))
			}
			tree := md.Doc(parts...)
			// The cached render goes first: the one without a cache would
			// fill the memo.
			got, err2 := md.NewRenderer(md.WithCounter(c), md.WithCache(cache)).Render(tree)
			want, err1 := md.NewRenderer(md.WithCounter(c)).Render(tree)
			if (err1 == nil) != (err2 == nil) || got.Text != want.Text {
				t.Fatalf("seed %d round %d: text differs\n%q\n%q", seed, round, got.Text, want.Text)
			}
			if !sameReport(got.Report, want.Report) {
				t.Fatalf("seed %d round %d: report differs\n%+v\n%+v", seed, round, show(got.Report), show(want.Report))
			}
			earlier = append(earlier, kept{got, strings.Clone(got.Text)})
			for i, k := range earlier {
				if k.res.Text != k.text {
					t.Fatalf("seed %d round %d: the text of round %d changed", seed, round, i)
				}
			}
		}
	}
}

// The buffers of results no longer kept are written again by later
// renders (see md's prompts pool), while every result still kept, with
// its report, stays what it was.
func TestKeptResultsStayWhileBuffersAreReused(t *testing.T) {
	c, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	edit := editedPrompt()
	r := md.NewRenderer(md.WithCounter(c), md.WithCache(md.NewCache()))
	type kept struct {
		res  md.Result
		text string
		k    int
	}
	var keep []kept
	for k := range 120 {
		res, err := r.Render(edit(k))
		if err != nil {
			t.Fatal(err)
		}
		if k%10 == 3 {
			keep = append(keep, kept{res, strings.Clone(res.Text), k})
		}
		if k%4 == 0 {
			runtime.GC() // the buffers of dropped results go to the pool
		}
	}
	for _, kp := range keep {
		if kp.res.Text != kp.text {
			t.Fatalf("render %d: the kept text changed", kp.k)
		}
		want, err := md.NewRenderer(md.WithCounter(c)).Render(edit(kp.k))
		if err != nil || want.Text != kp.text {
			t.Fatalf("render %d: differs from a render without a cache (%v)", kp.k, err)
		}
		if !sameReport(kp.res.Report, want.Report) {
			t.Fatalf("render %d: report differs\n got %+v\nwant %+v", kp.k, show(kp.res.Report), show(want.Report))
		}
	}
}
