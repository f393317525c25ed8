package md_test

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/loomctx/loom/internal/golden"
	"github.com/loomctx/loom/md"
)

// words counts whitespace-separated words: a counter whose results can be
// checked by eye in the budget tests.
type words struct{}

func (words) Count(s string) int { return len(strings.Fields(s)) }

func TestPrimitives(t *testing.T) {
	T := func(s string) md.Node { return md.Text(s) }
	cases := []struct {
		name string
		node md.Node
		want string
	}{
		{"text", T("hello"), "hello"},
		{"raw is never escaped", md.XML("x", nil, md.Raw("<b>&</b>")), "<x><b>&</b></x>"},
		{"invalid utf8 text", T("a\xffb"), "a\uFFFDb"},
		{"invalid utf8 raw", md.Raw("\xc3"), "\uFFFD"},
		{"doc", md.Doc(md.Title(1, T("Report")), md.Span(T("Some introductory text here.")), md.Hr(), md.Span(T("Footer text."))),
			"# Report\n\nSome introductory text here.\n\n---\n\nFooter text."},
		{"lines", md.Lines(T("a"), T("b")), "a\nb"},
		{"span", md.Span(T("a"), T("b")), "ab"},
		{"paragraphs", md.Doc(md.P(T("one "), md.Bold(T("two"))), md.P(T("three"))), "one **two**\n\nthree"},
		{"title default levels", md.Group{md.Title(0, T("a")), md.Title(3, T("b")), md.Title(9, T("c"))}, "# a### b###### c"},
		{"title is one line", md.Title(2, T("a\nb")), "## a b"},
		{"empty title", md.Title(2, T("")), ""},
		{"bold italic code", md.Bold(md.Italic(md.Code("deep"))), "***`deep`***"},
		{"code with backticks", md.Code("a`b"), "``a`b``"},
		{"code starting with backtick", md.Code("`x"), "`` `x ``"},
		{"empty bold", md.Bold(T("")), ""},
		{"link", md.Link("https://x.dev/a", T("docs")), "[docs](https://x.dev/a)"},
		{"link with spaces", md.Link("a b.md", T("f")), "[f](<a b.md>)"},
		{"link without text", md.Link("https://x.dev", nil), "[https://x.dev](https://x.dev)"},
		{"br", md.Span(T("a"), md.Br(), T("b")), "a\nb"},
		{"fence", md.Fence("sql title=query", "SELECT 1"), "```sql title=query\nSELECT 1\n```"},
		{"fence keeps one trailing newline", md.Fence("", "x\n"), "```\nx\n```"},
		{"empty fence", md.Fence("", ""), "```\n```"},
		{"fence grows", md.Fence("md", "```go\nx\n```"), "````md\n```go\nx\n```\n````"},
		{"ul", md.UL(md.Item(T("a")), md.Item(T("b"))), "- a\n- b"},
		{"ol", md.OL(md.Item(T("a")), md.Item(T("b"))), "1. a\n2. b"},
		{"nested lists indent alike", md.UL(md.Item(T("A")), md.UL(md.Item(T("B")), md.UL(md.Item(T("C1")), md.Item(T("C2")))), md.Item(T("D"))),
			"- A\n  - B\n    - C1\n    - C2\n- D"},
		{"numbering counts items only", md.OL(md.Item(T("a")), md.UL(md.Item(T("x"))), md.Item(T("b")), nil, md.Item(T("")), md.Item(T("c"))),
			"1. a\n   - x\n2. b\n3. c"},
		{"nested ordered restarts", md.OL(md.Item(T("a")), md.OL(md.Item(T("x")), md.Item(T("y")))), "1. a\n   1. x\n   2. y"},
		{"list in item", md.UL(md.Item(T("p"), md.UL(md.Item(T("c")))), md.Item(T("multi\nline"))), "- p\n  - c\n- multi\n  line"},
		{"list after inline text", md.Span(T("Columns are:"), md.UL(md.Item(T("id")), md.Item(T("name")))), "Columns are:\n- id\n- name"},
		{"list of a group", md.UL(md.Map([]string{"x", "y"}, func(s string) md.Node { return md.Item(T(s)) })), "- x\n- y"},
		{"empty list", md.Span(T("a"), md.UL(nil, md.Item(T("")))), "a"},
		{"titled list", &md.TitledList{Title: T("Colors"), Max: 2, Items: []md.Node{T("Red"), T("Green"), T("Blue"), T("Yellow")}},
			"Colors:\n- Red\n- Green\n…(2 more)"},
		{"titled list unlimited", &md.TitledList{Title: T("T"), Items: []md.Node{T("a")}}, "T:\n- a"},
		{"titled list empty", &md.TitledList{Title: T("T")}, ""},
		{"xml", md.XML("memory", []md.Attr{{Name: "type", Value: "fact"}, {Name: "source", Value: "user"}}, T("The user prefers dark mode.")),
			`<memory type="fact" source="user">The user prefers dark mode.</memory>`},
		{"xml nesting", md.XML("container", nil, md.XML("child", nil, T("Child content")), md.XML("child", nil, T("a\nb"))),
			"<container>\n  <child>Child content</child>\n  <child>\n    a\n    b\n  </child>\n</container>"},
		{"xml empty", md.XML("t", nil), "<t/>"},
		{"xml escaping", md.XML("d", []md.Attr{{Name: "q", Value: `a"b<c>&'`}}, T(`x < y & "z" 'w'`)),
			`<d q="a&quot;b&lt;c&gt;&amp;&apos;">x &lt; y &amp; &quot;z&quot; &apos;w&apos;</d>`},
		{"quote every line", md.Quote(T("line one\nline two\n\npara")), "> line one\n> line two\n>\n> para"},
		{"table", &md.Table{Header: []md.Node{T("a"), T("b")}, Rows: [][]md.Node{{T("1|2"), T("x\ny")}, {T("only")}}},
			"| a | b |\n| --- | --- |\n| 1\\|2 | x y |\n| only |  |"},
		{"empty table", &md.Table{}, ""},
		{"prefix", &md.Block{Prefix: "---", Sep: "\n", Children: []md.Node{T("Hello"), T("World")}}, "---Hello\nWorld"},
		{"prefix on empty", &md.Block{Prefix: "---", Children: []md.Node{nil}}, ""},
		{"prefix and indent", &md.Block{Prefix: "P:", Indent: "  ", Sep: "\n", Children: []md.Node{T("a"), T("b")}}, "  P:a\n  b"},
		{"indent skips blank lines", &md.Block{Indent: ">", Children: []md.Node{T("a"), T("b")}, Sep: "\n\n"}, ">a\n\n>b"},
		{"if", md.Doc(md.If(false, T("no")), md.If(true, T("yes"))), "yes"},
		{"iff", md.Iff(false, func() md.Node { panic("not called") }), ""},
		{"func", md.Func(func(w io.Writer) error { _, err := io.WriteString(w, "custom"); return err }), "custom"},
		{"section", md.Sec(2, "Rules", md.Text("be kind")), "## Rules\n\nbe kind"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := md.String(c.node); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestEmptyChildren covers nao's stray separators: nothing that renders empty
// may add one.
func TestEmptyChildren(t *testing.T) {
	empty := func() md.Node { return nil }
	cases := []struct {
		name string
		node md.Node
		want string
	}{
		{"empty string", md.Doc(md.Text("a"), md.Text(""), md.Text("b")), "a\n\nb"},
		{"nil", md.Doc(md.Text("a"), nil, md.Text("b")), "a\n\nb"},
		{"component rendering nothing", md.Doc(md.Text("a"), empty(), md.Text("b")), "a\n\nb"},
		{"block of empties", md.Doc(md.Text("a"), md.Span(nil, md.Text("")), md.Doc(md.Group{}), md.Text("b")), "a\n\nb"},
		{"no stray rule", &md.Block{Sep: "\n\n---\n\n", Children: []md.Node{md.Text("x"), md.Text(""), md.Sec(2, "Empty"), md.Text("y")}}, "x\n\n---\n\ny"},
		{"no trailing blank line", md.Doc(md.Text("x"), &md.Block{Sep: "\n\n---\n\n"}), "x"},
		{"group keeps the separator", md.Doc(md.Text("BASE"), md.Group{md.Title(2, md.Text("A")), md.Text("b")}), "BASE\n\n## A\n\nb"},
		{"scope keeps the separator", md.Doc(md.Text("BASE"), md.Named("s", md.Title(2, md.Text("A")), md.Text("b"))), "BASE\n\n## A\n\nb"},
		{"empty section goes with its heading", md.Doc(md.Text("a"), md.Sec(2, "Memory", md.Text(""), nil), md.Text("b")), "a\n\nb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := md.String(c.node); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestDocumentGolden renders one document that uses every primitive.
func TestDocumentGolden(t *testing.T) {
	got := md.String(sampleDoc())
	golden.Check(t, "document", []byte(got))
	if again := md.String(sampleDoc()); again != got {
		t.Error("two renders of the same tree differ")
	}
}

func sampleDoc() md.Node {
	return md.Doc(
		md.Title(1, md.Text("Agent")),
		md.P(md.Text("You help with "), md.Bold(md.Text("data")), md.Text(" and "), md.Italic(md.Text("notes")), md.Text("."), md.Br(), md.Text("See "), md.Link("https://example.com", md.Text("the docs")), md.Text(".")),
		md.Sec(2, "Context",
			md.UL(
				md.Item(md.Code("RULES.md"), md.Text(" — project rules")),
				md.Item(md.Code("databases/"), md.Text(" — one folder per table:"), md.UL(md.Item(md.Code("columns.md")), md.Item(md.Code("preview.md")))),
			),
		),
		md.Sec(2, "Steps", md.OL(md.Item(md.Text("Plan.")), md.Item(md.Text("Run tools.")), md.Item(md.Text("Answer.")))),
		&md.TitledList{Title: md.Text("Tables"), Max: 2, Items: []md.Node{md.Text("orders"), md.Text("customers"), md.Text("payments")}},
		md.Fence("sql", "SELECT count(*) FROM orders;"),
		md.XML("skills", nil, md.XML("skill", []md.Attr{{Name: "available", Value: "true"}}, md.XML("name", nil, md.Text("pdf")), md.XML("description", nil, md.Text("Read & write <PDF> files")))),
		md.Quote(md.Text("A selected passage\nover two lines.")),
		&md.Table{Header: []md.Node{md.Text("metric"), md.Text("value")}, Rows: [][]md.Node{{md.Text("revenue"), md.Text("42")}}},
		md.Hr(),
		md.Text("End."),
	)
}

func TestBudgetDropsLowestPriorityFirst(t *testing.T) {
	var items []md.Node
	for i := range 6 {
		items = append(items, md.Named(fmt.Sprintf("m%d", i), md.Item(md.Textf("fact %d", i))).Prio(10+i))
	}
	tree := md.Doc(md.Named("intro", md.Text("one two three")), md.Sec(2, "Memory", md.UL(items...)))
	// Full: 3 + 2 ("## Memory") + 6 × 3 ("- fact i") = 23 words.
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(14)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	want := "one two three\n\n## Memory\n\n- fact 3\n- fact 4\n- fact 5"
	if res.Text != want {
		t.Errorf("got %q, want %q", res.Text, want)
	}
	if res.Report.Tokens != 14 || *res.Report.Budget != 14 {
		t.Errorf("report tokens %d budget %d", res.Report.Tokens, *res.Report.Budget)
	}
	status := map[string]md.Status{}
	for _, e := range res.Report.Sections() {
		status[e.Name] = e.Status
		if e.Status == md.Dropped && e.Reason == "" {
			t.Errorf("%s dropped without a reason", e.Name)
		}
	}
	for i, want := range []md.Status{md.Dropped, md.Dropped, md.Dropped, md.Kept, md.Kept, md.Kept} {
		if got := status[fmt.Sprintf("m%d", i)]; got != want {
			t.Errorf("m%d: %s, want %s", i, got, want)
		}
	}
	if status["intro"] != md.Kept {
		t.Error("intro has no priority and must be kept")
	}
}

func TestBudgetTiesDropTheLaterFirst(t *testing.T) {
	tree := md.Lines(md.Named("a", md.Text("x x")).Prio(1), md.Named("b", md.Text("y y")).Prio(1))
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(3)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "x x" {
		t.Errorf("got %q, want the earlier of two equal scopes kept", res.Text)
	}
}

func TestBudgetSectionDisappearsWithHeading(t *testing.T) {
	tree := md.Doc(md.Text("keep"), md.Sec(2, "Skills", md.Named("s1", md.Text("a b c")).Prio(1), md.Named("s2", md.Text("d e f")).Prio(2)))
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(2)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "keep" {
		t.Errorf("got %q", res.Text)
	}
}

func TestBudgetNotice(t *testing.T) {
	var items []md.Node
	for i := range 5 {
		items = append(items, md.Named("", md.Item(md.Textf("memory %d", i))).Prio(5-i))
	}
	mem := md.Named("memory", md.UL(items...)).OnDrop(func(n int) md.Node {
		return md.Textf("%d older memories were left out.", n)
	})
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(12)).Render(md.Doc(mem))
	if err != nil {
		t.Fatal(err)
	}
	want := "- memory 0\n- memory 1\n\n3 older memories were left out."
	if res.Text != want {
		t.Errorf("got %q, want %q", res.Text, want)
	}
	dropped := 0
	for _, e := range res.Report.Sections() {
		if e.Status == md.Dropped {
			dropped++
		}
	}
	if dropped != 3 {
		t.Errorf("report lists %d drops, want 3 (unnamed scopes too)", dropped)
	}
}

func TestBudgetInstead(t *testing.T) {
	tree := md.Doc(md.Text("a"), md.Named("big", md.Text(strings.Repeat("w ", 50))).Prio(1).Otherwise(md.Text("(left out)")))
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(5)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "a\n\n(left out)" {
		t.Errorf("got %q", res.Text)
	}
}

func TestBudgetTruncatesAtLineBoundary(t *testing.T) {
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	tree := md.Doc(md.Text("head"), md.Named("memory", md.Text(strings.Join(lines, "\n"))).Prio(1).Truncate(0).From("memory/MEMORY.md"))
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(30)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Tokens > 30 {
		t.Errorf("%d tokens, over the budget", res.Report.Tokens)
	}
	if !strings.Contains(res.Text, "line 0\n") || !strings.Contains(res.Text, "cut from memory/MEMORY.md]") {
		t.Errorf("not cut as expected:\n%s", res.Text)
	}
	for _, ln := range strings.Split(res.Text, "\n") {
		if strings.HasPrefix(ln, "line ") && len(strings.Fields(ln)) != 2 {
			t.Errorf("a line was cut in the middle: %q", ln)
		}
	}
	var e md.Entry
	for _, s := range res.Report.Sections() {
		if s.Name == "memory" {
			e = s
		}
	}
	if e.Status != md.Truncated || e.Reason == "" || e.Sources[0] != "memory/MEMORY.md" {
		t.Errorf("report entry %+v", e)
	}
}

func TestOwnLimitTruncation(t *testing.T) {
	text := "keep 1\nkeep 2\n```\ninside fence a b c d e f\nstill inside\n```\nafter\n"
	n := md.Named("m", md.Text(text)).Truncate(15)
	res, err := md.NewRenderer(md.WithCounter(words{})).Render(n)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, "inside fence") && !strings.Contains(res.Text, "still inside") {
		t.Errorf("cut inside a code fence:\n%s", res.Text)
	}
	if !strings.HasPrefix(res.Text, "keep 1\nkeep 2\n[…") {
		t.Errorf("got %q", res.Text)
	}
}

func TestOverBudget(t *testing.T) {
	tree := md.Doc(md.Text("a b c d e"), md.Named("x", md.Text("f g")).Prio(1))
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(3)).Render(tree)
	var over *md.OverBudgetError
	if !errors.As(err, &over) || over.Tokens != 5 || over.Budget != 3 {
		t.Fatalf("err = %v", err)
	}
	if res.Text != "a b c d e" {
		t.Errorf("best effort text %q", res.Text)
	}
	if !strings.Contains(err.Error(), "2 over the budget of 3") {
		t.Errorf("message %q", err)
	}
}

func TestBadBudget(t *testing.T) {
	for _, b := range []int{0, -5} {
		_, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(b)).Render(md.Text("x"))
		if !errors.Is(err, md.ErrBadBudget) {
			t.Errorf("budget %d: err = %v", b, err)
		}
	}
}

func TestReportWithoutBudget(t *testing.T) {
	tree := md.Doc(md.Named("a", md.Text("one two")).From("A.md"), md.Named("", md.Text("anon")), md.Named("b", md.Text("three")))
	res, err := md.NewRenderer(md.WithCounter(words{})).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Budget != nil || res.Report.Tokens != 4 || len(res.Report.Sections()) != 2 {
		t.Fatalf("report %+v", res.Report)
	}
	a := res.Report.Sections()[0]
	if a.Name != "a" || a.Tokens != 2 || a.Status != md.Kept || res.Text[a.Start:a.End] != "one two" {
		t.Errorf("entry %+v", a)
	}
}

type failWriter struct{}

func (w *failWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteReturnsWriteErrors(t *testing.T) {
	if err := md.Write(&failWriter{}, md.Text("x")); err == nil || err.Error() != "disk full" {
		t.Errorf("md.Write: %v", err)
	}
	if _, err := md.NewRenderer().Write(&failWriter{}, md.Text("x")); err == nil {
		t.Error("Renderer.Write swallowed a write error")
	}
	fnErr := errors.New("boom")
	if err := md.Write(io.Discard, md.Func(func(io.Writer) error { return fnErr })); !errors.Is(err, fnErr) {
		t.Errorf("Func error lost: %v", err)
	}
}

func FuzzRender(f *testing.F) {
	f.Add("hello", "a\nb", 3)
	f.Add("\xff\xfe", "```\ncode\n", 1)
	f.Add("<&>\"'", "- x\n- y", 0)
	f.Fuzz(func(t *testing.T, a, b string, budget int) {
		tree := md.Doc(
			md.Title(2, md.Text(a)),
			md.UL(md.Item(md.Text(a)), md.OL(md.Item(md.Text(b)))),
			md.XML("x", []md.Attr{{Name: "k", Value: b}}, md.Text(a)),
			md.Quote(md.Text(b)),
			md.Named("t", md.Text(b)).Prio(1).Truncate(0),
			md.Named("u", md.Text(a)).Prio(2),
			&md.Table{Header: []md.Node{md.Text(a)}, Rows: [][]md.Node{{md.Text(b)}}},
			md.Fence(a, b),
		)
		out := md.String(tree)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 in %q", out)
		}
		if budget < 1 {
			budget = 1
		}
		res, _ := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(budget%200+1)).Render(tree)
		if !utf8.ValidString(res.Text) {
			t.Fatalf("invalid UTF-8 in budgeted %q", res.Text)
		}
	})
}

func FuzzTruncate(f *testing.F) {
	f.Add("one\ntwo\nthree\n```\nx y z\n```\nfour", 3)
	f.Add("héllo wörld\n日本語 テキスト\n\xff", 1)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 1 {
			limit = 1
		}
		res, _ := md.NewRenderer(md.WithCounter(words{})).Render(md.Named("m", md.Text(text)).Truncate(limit%50 + 1))
		if !utf8.ValidString(res.Text) {
			t.Fatalf("split UTF-8 sequence in %q", res.Text)
		}
	})
}

func ExampleRenderer_Render() {
	memories := md.UL(
		md.Named("", md.Item(md.Text("Answer in French."))).Prio(2),
		md.Named("", md.Item(md.Text("The user works on billing and invoices every day."))).Prio(1),
	)
	prompt := md.Doc(
		md.Sec(2, "Persona", md.Text("Be brief.")),
		md.Named("memory", md.Sec(2, "Memory", memories)).OnDrop(func(n int) md.Node {
			return md.Textf("(%d older memory left out.)", n)
		}),
	)
	res, _ := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(15)).Render(prompt)
	fmt.Println(res.Text)
	// Output:
	// ## Persona
	//
	// Be brief.
	//
	// ## Memory
	//
	// - Answer in French.
	//
	// (1 older memory left out.)
}

func TestBudgetSectionGoesWithItsIntroduction(t *testing.T) {
	tree := md.Doc(md.Text("keep"), md.Sec(2, "Skills",
		md.Raw("Read a skill before using it."),
		md.Named("list", md.Named("s1", md.Text("a b c")).Prio(1), md.Named("s2", md.Text("d e f")).Prio(2)).OnDrop(func(n int) md.Node {
			return md.Textf("%d more", n)
		})))
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(3)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "keep" {
		t.Errorf("got %q: a section whose entries were all dropped must go whole", res.Text)
	}
	some, _ := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(14)).Render(tree)
	if some.Text != "keep\n\n## Skills\n\nRead a skill before using it.\n\nd e f\n\n1 more" {
		t.Errorf("got %q", some.Text)
	}
}

// A scope whose text a section removed (its entries were all dropped) is not
// in the prompt, so the report must not call it kept.
func TestReportAgreesWithRemovedSection(t *testing.T) {
	tree := md.Doc(md.Text("keep"), md.Named("skills", md.Sec(2, "Skills",
		md.Raw("Read a skill before using it."),
		md.Named("list", md.Named("s1", md.Text("a b c")).Prio(1), md.Named("s2", md.Text("d e f")).Prio(2)).OnDrop(func(n int) md.Node {
			return md.Textf("%d more", n)
		}))), md.Named("empty", md.Text("")))
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(3)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "keep" {
		t.Fatalf("got %q", res.Text)
	}
	for _, e := range res.Report.Sections() {
		if e.Status != md.Dropped {
			t.Errorf("%s is %s (%d tokens), but none of it is in %q", e.Name, e.Status, e.Tokens, res.Text)
		}
		if e.Name == "empty" {
			t.Errorf("an empty scope that lost nothing is listed: %+v", e)
		}
	}
}

// sameReport reports whether two reports say the same: totals, budgets and
// lines.
func sameReport(a, b md.Report) bool {
	return a.Tokens == b.Tokens && reflect.DeepEqual(a.Budget, b.Budget) && reflect.DeepEqual(a.Sections(), b.Sections())
}

// show prints a report with its lines, for a failure message.
func show(r md.Report) string {
	b := "none"
	if r.Budget != nil {
		b = fmt.Sprint(*r.Budget)
	}
	return fmt.Sprintf("{Tokens:%d Budget:%s Sections:%+v}", r.Tokens, b, r.Sections())
}
