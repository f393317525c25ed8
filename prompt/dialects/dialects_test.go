package dialects

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/golden"
	"github.com/loomctx/loom/workspace"
)

// dump writes a set in a stable, readable form for golden files.
func dump(ds []Dialect) []byte {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s order=%d label=%q matches=%s source=%s\n", d.Name, d.Order, d.Label, strings.Join(d.Matches, ","), d.Source)
		for _, r := range d.LabelledSQL() {
			fmt.Fprintf(&b, "  sql: %s\n", r)
		}
		for _, r := range d.Tools {
			fmt.Fprintf(&b, "  tool: %s\n", r)
		}
	}
	return []byte(b.String())
}

func TestBuiltinRegistry(t *testing.T) {
	set := Builtin()
	golden.Check(t, "builtin", dump(set.All()))

	want := map[string]int{ // SQL rules per dialect, counted by hand from data/
		"bigquery": 7, "mssql": 5, "mysql": 2, "redshift": 6, "clickhouse": 0,
		"postgres": 6, "snowflake": 6, "duckdb": 5, "databricks": 5, "trino": 6,
	}
	all := set.All()
	if len(all) != len(want) {
		t.Errorf("%d built-in dialects, want %d", len(all), len(want))
	}
	for _, d := range all {
		n, ok := want[d.Name]
		if !ok {
			t.Errorf("unexpected dialect %s", d.Name)
			continue
		}
		if len(d.SQL) != n {
			t.Errorf("%s: %d SQL rules, want %d", d.Name, len(d.SQL), n)
		}
		if d.Name == "clickhouse" && len(d.Tools) != 1 {
			t.Errorf("clickhouse: %d tool rules, want 1", len(d.Tools))
		}
		for _, r := range append(d.SQL, d.Tools...) {
			if strings.HasSuffix(r, " ") || strings.Contains(r, "\n") || !strings.HasSuffix(r, ".") {
				t.Errorf("%s: rule is not one clean sentence-ending line: %q", d.Name, r)
			}
		}
	}
}

// The embedded files are hand-written; hold them to the same shape as the
// channel files: no trailing blanks, one final newline.
func TestBuiltinFilesClean(t *testing.T) {
	err := fs.WalkDir(builtinFS, "data", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, _ := fs.ReadFile(builtinFS, p)
		text := string(data)
		if !strings.HasSuffix(text, "\n") || strings.HasSuffix(text, "\n\n") {
			t.Errorf("%s: must end with exactly one newline", p)
		}
		for i, l := range strings.Split(text, "\n") {
			if strings.TrimRight(l, " \t") != l {
				t.Errorf("%s:%d: trailing whitespace", p, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFor(t *testing.T) {
	set := Builtin()
	names := func(ds []Dialect) string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		types []string
		want  string
	}{
		{nil, ""},
		{[]string{"RedShift"}, "redshift"},
		// Registry order, not connection order; one entry per dialect.
		{[]string{"snowflake", "fabric", "BigQuery", "mssql", "snowflake"}, "bigquery,mssql,snowflake"},
		{[]string{"athena", "presto", "trino"}, "trino"},
		{[]string{"postgresql", "clickhouse"}, "clickhouse,postgres"},
		// Exact match only: no prefixes, no unknown types.
		{[]string{"sqlserver", "synapse", "postgres16", "my sql", ""}, ""},
	}
	for _, tt := range tests {
		if got := names(set.For(tt.types)); got != tt.want {
			t.Errorf("For(%q) = %q, want %q", tt.types, got, tt.want)
		}
	}
	if l := set.For([]string{"MSSQL"})[0].Label; l != "T-SQL (Fabric / SQL Server)" {
		t.Errorf("mssql label %q", l)
	}
	got := set.For([]string{"redshift"})[0].LabelledSQL()[0]
	if !strings.HasPrefix(got, "**Redshift:** `SELECT DISTINCT ON` is not supported") {
		t.Errorf("labelled first rule: %q", got)
	}
}

func writeFiles(t *testing.T, files map[string]string) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestWorkspaceDialects(t *testing.T) {
	ws := writeFiles(t, map[string]string{
		// Replaces the built-in, keeping its matches and label.
		"agent/dialects/mysql.md": "## SQL\n\n- Our MySQL 5.7 has no window functions;\n  use variables or self-joins.\n",
		// Extends the built-in.
		"agent/dialects/bigquery.md": "---\nextend: true\n---\n\n## Tools\n\n- Dry-run large queries first.\n",
		// A new dialect; wins over the built-in for fabric only.
		"agent/dialects/fabric-lakehouse.md": "---\nmatches: [fabric]\nlabel: Fabric Lakehouse\norder: 5\n---\n## SQL\n- Lakehouse tables are read-only from the SQL endpoint.\n",
		// A new dialect for a type loom does not know.
		"agent/dialects/sqlite.md": "## SQL\n\n- Dates are text; compare them as ISO strings.\n",
		// Malformed: diagnostics, the rest still loads.
		"agent/dialects/broken.md":    "---\nmatches: [broken]\nlabl: x\n---\n## SQL\n- a.\n",
		"agent/dialects/prose.md":     "## SQL\n\nThis is a paragraph, not a rule.\n",
		"agent/dialects/empty.md":     "",
		"agent/dialects/notes.txt":    "ignored: not .md",
		"agent/dialects/oracle.md":    "---\nextend: true\n---\n## SQL\n- Use FETCH FIRST n ROWS ONLY.\n",
		"agent/dialects/Bad Name.md":  "## SQL\n- x.\n",
		"agent/dialects/unclosed.md":  "---\nmatches: [x]\n## SQL\n- x.\n",
		"agent/dialects/wrongsect.md": "## SQL\n- a.\n\n## Examples\n- b.\n",
	})
	var diags workspace.Diagnostics
	set, err := Load(ws, &diags)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "workspace", dump(set.All()))

	var got []string
	for _, d := range diags {
		got = append(got, d.String())
	}
	want := []string{
		`agent/dialects/Bad Name.md: warning: "bad name" is not a dialect name (lowercase letters, digits, _ . and -); file ignored`,
		`agent/dialects/broken.md:3: warning: front matter: unknown field "labl"; file ignored`,
		`agent/dialects/empty.md: warning: no rules (add "- " bullets under "## SQL" or "## Tools"); file ignored`,
		`agent/dialects/oracle.md:2: warning: extend: no built-in dialect is named "oracle"; the file adds a new dialect`,
		`agent/dialects/prose.md:3: warning: expected a "## SQL" or "## Tools" heading or a "- " rule, got "This is a paragraph, not a rule."; file ignored`,
		`agent/dialects/unclosed.md:1: warning: front matter has no closing ---; file ignored`,
		`agent/dialects/wrongsect.md:4: warning: unknown section "Examples" (want "## SQL" or "## Tools"); file ignored`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// fabric goes to the workspace dialect, mssql keeps the built-in.
	var names []string
	for _, d := range set.For([]string{"fabric", "mssql", "MySQL", "sqlite", "bigquery"}) {
		names = append(names, d.Name+"="+d.Label)
	}
	if g := strings.Join(names, " "); g != "fabric-lakehouse=Fabric Lakehouse bigquery=BigQuery mssql=T-SQL (Fabric / SQL Server) mysql=MySQL sqlite=sqlite" {
		t.Errorf("For: %s", g)
	}
	my := set.For([]string{"mysql"})[0]
	if len(my.SQL) != 1 || my.SQL[0] != "Our MySQL 5.7 has no window functions; use variables or self-joins." || my.Source != "agent/dialects/mysql.md" {
		t.Errorf("replaced mysql: %+v", my)
	}
	bq := set.For([]string{"bigquery"})[0]
	if len(bq.SQL) != 7 || len(bq.Tools) != 1 || bq.Source != "builtin:bigquery.md + agent/dialects/bigquery.md" {
		t.Errorf("extended bigquery: %+v", bq)
	}
}

func TestWorkspaceDialectOutside(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("## SQL\n- leaked.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := writeFiles(t, map[string]string{"agent/dialects/ok.md": "## SQL\n- fine.\n"})
	if err := os.Symlink(outside, filepath.Join(ws.Root(), "agent", "dialects", "postgres.md")); err != nil {
		t.Skip("no symlinks:", err)
	}
	var diags workspace.Diagnostics
	set, err := Load(ws, &diags)
	if err != nil {
		t.Fatal(err)
	}
	if len(diags) != 1 || diags[0].Code != "read.outside" || diags[0].Path != "agent/dialects/postgres.md" {
		t.Errorf("diagnostics: %v", diags)
	}
	if pg := set.For([]string{"postgres"}); len(pg) != 1 || pg[0].Source != "builtin:postgres.md" {
		t.Errorf("postgres should stay built-in: %+v", pg)
	}
}

func TestNoWorkspaceFolder(t *testing.T) {
	ws := writeFiles(t, map[string]string{"RULES.md": "x"})
	var diags workspace.Diagnostics
	set, err := Load(ws, &diags)
	if err != nil || len(diags) != 0 || len(set.All()) != 10 {
		t.Errorf("err %v diags %v dialects %d", err, diags, len(set.All()))
	}
}

func FuzzParse(f *testing.F) {
	f.Add("---\nmatches: [a]\n---\n## SQL\n- x.\n  y\n")
	f.Add("## Tools\n- x\n")
	f.Add("---\n---\n")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse("agent/dialects/x.md", text)
		if err == nil && len(p.SQL)+len(p.Tools) == 0 {
			t.Fatal("parsed a dialect with no rules")
		}
	})
}
