package md_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// catalogueEntry is one prioritised entry of an XML catalogue, of the
// kinds that decide how an element lays out and counts its content:
// several lines, one line, nothing at all, a nested element, blank lines,
// text starting with "/" or white space, a list.
func catalogueEntry(rng *rand.Rand, name string) *md.Scope {
	var n md.Node
	switch rng.IntN(7) {
	case 0:
		n = md.Text(lines(rng, name))
	case 1:
		n = md.Text(name) // one line
	case 2:
		n = nil // renders nothing
	case 3:
		n = md.Raw("/" + lines(rng, name))
	case 4:
		n = md.UL(md.Item(md.Text(name)), md.Item(md.Text(lines(rng, name))))
	case 5:
		n = md.Raw("  " + name + "\n\n" + lines(rng, name))
	default:
		n = md.XML("skill", []md.Attr{{Name: "available", Value: fmt.Sprint(rng.IntN(2) == 0)}},
			md.XML("name", nil, md.Text(name)),
			md.XML("description", nil, md.Text(lines(rng, name))),
		)
	}
	return md.Named("skill:"+name, n).Prio(rng.IntN(9)).From(name + "/SKILL.md")
}

// catalogue places entries as the skills summary does: a named part
// holding a section whose body is a scope with an introduction and the
// element.
func catalogue(entries []md.Node, memo *md.XMLMemo) md.Node {
	x := md.XML("skills", nil, entries...)
	if memo != nil {
		x = x.Memo(memo)
	}
	return md.Doc(
		md.Named("head", md.Text("Before.")),
		md.Named("skills", md.Sec(1, "Skills", md.Named("", md.Raw("Intro."), x).OnDrop(func(k int) md.Node {
			return md.Textf("(%d more)", k)
		}))),
		md.Named("tail", md.Text("After.\n/end")),
	)
}

// A catalogue rendered through its memo, again and again as its entries
// are edited, added, removed and moved, gives exactly the text and report
// of a render from nothing that counts every text whole: with and without
// a budget (which the memo leaves alone), and with the cache of unchanged
// scopes as a builder uses it.
func TestXMLMemoMatchesFullRender(t *testing.T) {
	exact, raw, whole := o200k(t)
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 29))
		memo, cache := md.NewXMLMemo(), md.NewCache()
		next := 0
		newEntry := func() md.Node {
			next++
			return catalogueEntry(rng, fmt.Sprintf("s%d", next))
		}
		var entries []md.Node
		for range rng.IntN(12) {
			entries = append(entries, newEntry())
		}
		for step := range 25 {
			if step > 0 {
				switch k := rng.IntN(5); {
				case k <= 1 && len(entries) > 0: // an edit: a new scope in its place
					entries[rng.IntN(len(entries))] = newEntry()
				case k == 2:
					i := rng.IntN(len(entries) + 1)
					entries = append(entries[:i], append([]md.Node{newEntry()}, entries[i:]...)...)
				case k == 3 && len(entries) > 0:
					i := rng.IntN(len(entries))
					entries = append(entries[:i], entries[i+1:]...)
				case len(entries) > 1:
					i, j := rng.IntN(len(entries)), rng.IntN(len(entries))
					entries[i], entries[j] = entries[j], entries[i]
				}
			}
			list := append([]md.Node(nil), entries...)
			if rng.IntN(6) == 0 {
				list = append(list, nil)
			}
			want, err1 := md.NewRenderer(md.WithCounter(whole)).Render(catalogue(list, nil))
			got, err2 := md.NewRenderer(md.WithCounter(exact), md.WithCache(cache)).Render(catalogue(list, memo))
			if err1 != nil || err2 != nil {
				t.Fatalf("seed %d step %d: %v / %v", seed, step, err1, err2)
			}
			if got.Text != want.Text {
				t.Fatalf("seed %d step %d: text differs\n got %q\nwant %q", seed, step, got.Text, want.Text)
			}
			if !sameReport(got.Report, want.Report) {
				t.Fatalf("seed %d step %d: report differs\n got %+v\nwant %+v", seed, step, show(got.Report), show(want.Report))
			}
			if step%5 == 4 {
				budget := 1 + rng.IntN(raw.Count(want.Text)+3)
				want, err1 := md.NewRenderer(md.WithCounter(whole), md.WithBudget(budget)).Render(catalogue(list, nil))
				got, err2 := md.NewRenderer(md.WithCounter(exact), md.WithBudget(budget), md.WithCache(cache)).Render(catalogue(list, memo))
				if (err1 == nil) != (err2 == nil) || got.Text != want.Text || !sameReport(got.Report, want.Report) {
					t.Fatalf("seed %d step %d budget %d: differs\n got %q\nwant %q", seed, step, budget, got.Text, want.Text)
				}
			}
		}
	}
}

// Without token counts, and with a counter whose counts do not add up, the
// memo still gives the text and report of a render without it.
func TestXMLMemoOtherCounters(t *testing.T) {
	for _, c := range []md.Counter{nil, tokens.Estimate{}, words{}} {
		rng := rand.New(rand.NewPCG(3, 5))
		memo := md.NewXMLMemo()
		var entries []md.Node
		for i := range 8 {
			entries = append(entries, catalogueEntry(rng, fmt.Sprintf("e%d", i)))
		}
		for step := range 6 {
			entries[rng.IntN(len(entries))] = catalogueEntry(rng, fmt.Sprintf("f%d", step))
			var opts []md.Option
			if c != nil {
				opts = append(opts, md.WithCounter(c))
			}
			want, _ := md.NewRenderer(opts...).Render(catalogue(entries, nil))
			got, _ := md.NewRenderer(opts...).Render(catalogue(entries, memo))
			if got.Text != want.Text || !sameReport(got.Report, want.Report) {
				t.Fatalf("counter %T step %d: differs\n got %q\nwant %q", c, step, got.Text, want.Text)
			}
		}
	}
	// md.String renders without records: the memo stands aside.
	x := md.XML("skills", nil, md.Named("a", md.Text("a\nb"))).Memo(md.NewXMLMemo())
	if got, want := md.String(x), "<skills>\n  a\n  b\n</skills>"; got != want {
		t.Fatalf("String: %q, want %q", got, want)
	}
}

// Renders of one element that run at once, through one memo, each give
// the text and report of a render without it, while others fill the memo
// and take turns with its arrays.
func TestXMLMemoConcurrentRenders(t *testing.T) {
	exact, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	memo := md.NewXMLMemo()
	var versions [][]md.Node
	rng := rand.New(rand.NewPCG(7, 11))
	var entries []md.Node
	for i := range 30 {
		entries = append(entries, catalogueEntry(rng, fmt.Sprintf("c%d", i)))
	}
	for v := range 8 {
		list := append([]md.Node(nil), entries...)
		list[rng.IntN(len(list))] = catalogueEntry(rng, fmt.Sprintf("v%d", v))
		if v%3 == 2 {
			list = list[1:]
		}
		versions = append(versions, list)
	}
	want := make([]md.Result, len(versions))
	for v, list := range versions {
		want[v], _ = md.NewRenderer(md.WithCounter(exact)).Render(catalogue(list, nil))
	}
	done := make(chan string)
	for g := range 4 {
		go func() {
			for k := range 300 {
				v := (g + k*3) % len(versions)
				got, err := md.NewRenderer(md.WithCounter(exact)).Render(catalogue(versions[v], memo))
				if err != nil || got.Text != want[v].Text || !sameReport(got.Report, want[v].Report) {
					done <- fmt.Sprintf("goroutine %d render %d (version %d): differs (%v)", g, k, v, err)
					return
				}
			}
			done <- ""
		}()
	}
	for range 4 {
		if msg := <-done; msg != "" {
			t.Error(msg)
		}
	}
}
