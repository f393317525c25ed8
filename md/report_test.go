package md_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/loomctx/loom/md"
)

// A report encodes to the bytes a plain struct of its fields would, under
// both HTML escaping settings, and decodes back to the same JSON (Start and
// End are not in it).
func TestReportJSONIsThePlainShape(t *testing.T) {
	tree := md.Doc(
		md.Named("a <b> & c", md.Text("kept \u2028 text")).From("x&y.md"),
		md.Named("d", md.Text("one two three four five six seven")).Prio(1),
	)
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(4)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	plain := struct {
		Tokens   int        `json:"tokens"`
		Budget   *int       `json:"budget"`
		Sections []md.Entry `json:"sections"`
	}{res.Report.Tokens, res.Report.Budget, res.Report.Sections()}
	for _, escape := range []bool{true, false} {
		encode := func(v any) []byte {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(escape)
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		got, want := encode(res.Report), encode(plain)
		if !bytes.Equal(got, want) {
			t.Fatalf("escape %v:\n got %s\nwant %s", escape, got, want)
		}
		var back md.Report
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if again := encode(back); !bytes.Equal(again, got) {
			t.Fatalf("round trip:\n got %s\nwant %s", again, got)
		}
	}
	if err := json.Unmarshal([]byte(`{"tokens":1,"budget":null,"sections":[],"extra":1}`), new(md.Report)); err == nil {
		t.Error("an unknown field was accepted")
	}
}

// A report's lines are made once, however many copies ask at once, and
// every copy sees the same ones.
func TestReportLinesAreMadeOnce(t *testing.T) {
	var items []md.Node
	for i := range 200 {
		items = append(items, md.Named(string(rune('a'+i%26))+"x", md.Item(md.Textf("item %d", i))).Prio(i))
	}
	tree := md.Doc(md.Named("list", md.UL(items...)))
	res, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(100)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	want, err := md.NewRenderer(md.WithCounter(words{}), md.WithBudget(100)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	copies := []md.Report{res.Report, res.Report, res.Report, res.Report}
	got := make([][]md.Entry, len(copies))
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() { got[i] = copies[i].Sections() })
	}
	wg.Wait()
	for i := range got {
		if &got[i][0] != &got[0][0] {
			t.Fatalf("copy %d made its own lines", i)
		}
	}
	if !reflect.DeepEqual(got[0], want.Report.Sections()) || len(got[0]) != 201 {
		t.Fatalf("lines differ from another render's (%d lines)", len(got[0]))
	}
}
