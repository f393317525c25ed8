package template_test

import (
	"errors"
	htmltemplate "html/template"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	texttemplate "text/template"
	"time"

	"github.com/loomctx/loom/internal/template"
)

type role string

type content struct{ text string }

func (c content) String() string { return "<" + c.text + ">" }

type item struct {
	ID      string
	Content content
	Role    role
	N       int
	Prio    *int
	Tags    []string
	When    time.Time
}

type page struct {
	Title  string
	Items  []item
	Empty  []item
	Ptr    *item
	Nil    *item
	M      map[string]string
	Any    map[string]any
	Flag   bool
	Float  float64
	Nested struct{ Inner struct{ Deep string } }
}

func sample() page {
	two := 2
	p := page{
		Title: `Tom & "Jerry" <b>'x'</b> a+b`,
		Items: []item{
			{ID: "a1", Content: content{"hi"}, Role: "user", N: 1, Prio: &two, Tags: []string{"x", "y"}, When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
			{ID: "b2", Content: content{"yo & <you>"}, Role: "assistant", N: 3},
		},
		M:     map[string]string{"b": "B", "a": "A"},
		Any:   map[string]any{"k": 5, "s": "str", "z": nil},
		Flag:  true,
		Float: 12.5,
	}
	p.Ptr = &p.Items[0]
	p.Nested.Inner.Deep = "deep"
	return p
}

func funcs() map[string]any {
	return map[string]any{
		"join": strings.Join,
		"pct":  func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) },
		"half": func(a, b int) float64 { return float64(a) / float64(b) },
		"prio": func(p *int) string {
			if p == nil {
				return "—"
			}
			return strconv.Itoa(*p)
		},
		"ts":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") },
		"fail": func() (string, error) { return "", errors.New("boom") },
	}
}

// The texts below are filled by this package and by text/template (and, for
// the HTML cases, html/template); the outputs must be the same bytes.
var cases = []string{
	`plain text, no actions`,
	`{{.Title}}`,
	`{{.Nested.Inner.Deep}} {{.Ptr.ID}} {{.Float}} {{.Flag}}`,
	`{{.M.a}}{{.M.b}}{{.M.missing}}|{{.Any.k}} {{.Any.s}} {{.Any.z}} {{.Any.missing}}`,
	`{{if .Flag}}yes{{else}}no{{end}} {{if .Empty}}yes{{else if .Title}}title{{else}}none{{end}}`,
	`{{if .Nil}}x{{else if .Empty}}y{{else}}z{{end}}`,
	`{{range .Items}}[{{.ID}} {{.Role}} {{.Content}}]{{else}}none{{end}}`,
	`{{range .Empty}}x{{else}}none{{end}}`,
	`{{range .M}}{{.}},{{end}}`,
	"a  \n {{- .Title -}} \n\t b",
	"{{- range .Items}}\n- {{.ID}}\n{{- end}}\n",
	`{{/* a comment */}}x{{- /* trimmed */ -}} y`,
	`{{if eq .Items.N 1}}{{end}}`, // an error in both: Items is a slice
	`{{range .Items}}{{if eq .N 1}}one{{else}}{{.N}}{{end}} {{if ne (print .Role) "user"}}not user{{end}};{{end}}`,
	`{{range .Items}}{{if eq .Role "user"}}U{{end}}{{if not .Prio}}no prio{{end}} {{prio .Prio}} {{join .Tags ", "}} {{ts .When}};{{end}}`,
	`{{pct (half 1 3)}} {{pct .Float}} {{pct 2}}`,
	`{{"{{"}} section {{"}}"}} {{printf_missing}}`,
	`{{print .Title 3 .Flag}}`,
	`{{define "row"}}<{{.ID}}>{{end}}{{range .Items}}{{template "row" .}}{{end}}`,
	`{{.Missing}}`,
	`{{.Nil.ID}}`,
	`{{fail}}`,
	`{{.Title.Len}}`,
	`{{if}}{{end}}`,
	`{{range .Items}}`,
	`{{end}}`,
	`{{.Title | print}}`,
}

func TestSameAsTextTemplate(t *testing.T) {
	for _, src := range cases {
		want, wantErr := runStd(src, sample(), false)
		got, gotErr := run(src, sample(), false)
		if (wantErr != nil) != (gotErr != nil) {
			if strings.Contains(src, "|") && gotErr != nil { // pipelines are left out on purpose
				continue
			}
			t.Errorf("%q: error %v, text/template's %v", src, gotErr, wantErr)
			continue
		}
		if wantErr == nil && got != want {
			t.Errorf("%q:\n got %q\nwant %q", src, got, want)
		}
	}
}

func TestSameAsHTMLTemplate(t *testing.T) {
	for _, src := range []string{
		`<p title="{{.Title}}" data-x="{{.Float}}">{{.Title}}</p>`,
		`<ul>{{range .Items}}<li class="{{.Role}}" data-id="{{.ID}}">{{.Content}} {{ts .When}}</li>{{else}}<li>none</li>{{end}}</ul>`,
		`<option{{if eq .Title ""}} selected{{end}}>{{pct (half 1 4)}}</option><code>{{"{{"}} x {{"}}"}}</code>`,
		`<pre>{{.Any.s}} {{.M.a}}</pre>`,
	} {
		want, err := runStd(src, sample(), true)
		if err != nil {
			t.Fatalf("%q: html/template: %v", src, err)
		}
		got, err := run(src, sample(), true)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got != want {
			t.Errorf("%q:\n got %q\nwant %q", src, got, want)
		}
	}
}

func TestHTMLValuesPassThrough(t *testing.T) {
	tm := template.Must(template.NewHTML("x").Funcs(template.FuncMap{
		"md": func(s string) template.HTML { return template.HTML("<em>" + template.HTMLEscapeString(s) + "</em>") },
	}).Parse(`{{md .}} {{.}}`))
	var b strings.Builder
	if err := tm.Execute(&b, "a<b"); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "<em>a&lt;b</em> a&lt;b"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := template.HTMLEscapeString("\x00<'\"&>+"), texttemplate.HTMLEscapeString("\x00<'\"&>+"); got != want {
		t.Errorf("HTMLEscapeString = %q, text/template's %q", got, want)
	}
}

func TestMissingKeyError(t *testing.T) {
	tm := template.Must(template.New("m").Option("missingkey=error").Parse(`{{.a}}{{.b}}`))
	var b strings.Builder
	err := tm.Execute(&b, map[string]string{"a": "x"})
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("missing key: err = %v", err)
	}
}

func TestMethodsAreNotCalled(t *testing.T) {
	tm := template.Must(template.New("m").Parse(`{{.Content.String}}`))
	var b strings.Builder
	err := tm.Execute(&b, sample().Items[0])
	if err == nil || !strings.Contains(err.Error(), "methods are not called") {
		t.Errorf("err = %v, want one that says methods are not called", err)
	}
}

func TestParseFS(t *testing.T) {
	fsys := fstest.MapFS{
		"t/a.md":    {Data: []byte("A {{.X}}")},
		"t/b.md":    {Data: []byte("B {{template \"c\" .}}")},
		"t/defs.md": {Data: []byte("{{define \"c\"}}C{{.X}}{{end}}\n")},
	}
	tm := template.Must(template.New("").ParseFS(fsys, "t/*.md"))
	for name, want := range map[string]string{"a.md": "A 1", "b.md": "B C1"} {
		var b strings.Builder
		if err := tm.ExecuteTemplate(&b, name, map[string]int{"X": 1}); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("%s = %q, want %q", name, b.String(), want)
		}
	}
	one := template.Must(template.ParseFS(fsys, "t/a.md"))
	var b strings.Builder
	if err := one.Execute(&b, map[string]int{"X": 2}); err != nil || b.String() != "A 2" {
		t.Errorf("ParseFS(a.md) = %q, %v", b.String(), err)
	}
	if err := tm.ExecuteTemplate(&b, "nope", nil); err == nil {
		t.Error("an unknown template name was accepted")
	}
}

// TestLoomTemplates fills each of loom's own template files with the same
// sample data through both engines; a file that uses something this
// package does not read fails here.
func TestLoomTemplates(t *testing.T) {
	root := filepath.Join("..", "..")
	data := map[string]any{
		"Tool": "execute_sql", "Name": "Ada", "Description": "a helper", "Runtime": "posix", "Date": "2026-01-02",
		"SQL": true, "Clarify": false, "Cut": 12, "Path": "skills/x/SKILL.md", "N": 1, "Where": "skills/",
		"Time": "now", "Channel": "slack", "ChatID": "", "SenderID": "u1", "Memory": "", "Transcript": "t",
		"Messages":     []map[string]any{{"Role": "user", "Content": "hello <x>"}},
		"Instructions": []map[string]any{{"ID": "i1", "Content": "be brief"}},
		"Profile":      []map[string]any{},
		"NoSchema":     true,
	}
	var files []string
	for _, pat := range []string{"prompt/text/*.md", "skills/text/*.tmpl", "messages/*.tmpl", "llm/consolidate/user.md", "llm/extract/user.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d template files", len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2} {
			data["N"] = n
			want, err := runStd(string(src), data, false)
			if err != nil {
				t.Fatalf("%s: text/template: %v", f, err)
			}
			got, err := run(string(src), data, false)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if got != want {
				t.Errorf("%s:\n got %q\nwant %q", f, got, want)
			}
		}
	}
}

// TestInspectorPages parses the inspector's page templates with both
// html engines; the inspector's own tests fill them with real views.
func TestInspectorPages(t *testing.T) {
	fsys := os.DirFS(filepath.Join("..", "..", "inspector"))
	if _, err := fs.Stat(fsys, "templates"); err != nil {
		t.Skip("no inspector templates")
	}
	f := template.FuncMap{"markdown": func(string) template.HTML { return "" }, "pct": func(float64) string { return "" },
		"prio": func(*int) string { return "" }, "join": strings.Join, "budgetPct": func(int, int) float64 { return 0 },
		"ts": func(time.Time) string { return "" }, "score": func(float64) string { return "" }}
	tm, err := template.NewHTML("").Funcs(f).ParseFS(fsys, "templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"page", "view", "diff"} {
		if tm.Lookup(name) == nil {
			t.Errorf("no template %q", name)
		}
	}
}

func run(src string, data any, html bool) (string, error) {
	var tm *template.Template
	if html {
		tm = template.NewHTML("t")
	} else {
		tm = template.New("t")
	}
	tm, err := tm.Funcs(funcs()).Parse(src)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tm.Execute(&b, data)
	return b.String(), err
}

func runStd(src string, data any, html bool) (string, error) {
	var b strings.Builder
	if html {
		tm, err := htmltemplate.New("t").Funcs(funcs()).Parse(src)
		if err != nil {
			return "", err
		}
		err = tm.Execute(&b, data)
		return b.String(), err
	}
	tm, err := texttemplate.New("t").Funcs(funcs()).Parse(src)
	if err != nil {
		return "", err
	}
	err = tm.Execute(&b, data)
	return b.String(), err
}
