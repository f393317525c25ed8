package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/loomctx/loom/workspace"
)

func load(t *testing.T, files map[string]string, opts Options) *Set {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	return New(openWS(t, dir), opts).Load()
}

func noBuiltins(o Options) Options { o.NoBuiltins = true; return o }

func TestFrontmatterCases(t *testing.T) {
	tests := []struct {
		name, text string
		status     Status
		desc       string
		always     bool
		body       string
		diags      []string // substrings, one per diagnostic, in order
	}{
		{name: "plain", text: "---\nname: plain\ndescription: Does X.\n---\n\nBody.\n", status: StatusOK, desc: "Does X.", body: "Body."},
		{name: "always-false", text: "---\nname: always-false\ndescription: d\nalways: false\n---\nb", status: StatusOK, desc: "d", body: "b"},
		{name: "always-true", text: "---\nname: always-true\ndescription: d\nalways: true\n---\nb", status: StatusOK, desc: "d", always: true, body: "b"},
		{name: "meta-always", text: "---\nname: meta-always\ndescription: d\nmetadata: {\"openclaw\":{\"always\":true}}\n---\nb", status: StatusOK, desc: "d", always: true, body: "b"},
		{name: "yaml-meta", text: "---\nname: yaml-meta\ndescription: d\nmetadata:\n  nanobot:\n    always: true\n---\nb", status: StatusOK, desc: "d", always: true, body: "b"},
		{name: "folded", text: "---\nname: folded\ndescription: >\n  one\n  two\nlicense: MIT\n---\nb", status: StatusOK, desc: "one two\n", body: "b"},
		{name: "literal", text: "---\nname: literal\ndescription: |-\n  one\n  two\n---\nb", status: StatusOK, desc: "one\ntwo", body: "b"},
		{name: "crlf-bom", text: "\xEF\xBB\xBF---\r\nname: crlf-bom\r\ndescription: d\r\n---\r\nline1\r\nline2", status: StatusOK, desc: "d", body: "line1\nline2"},
		{name: "no-newline", text: "---\nname: no-newline\ndescription: d\n---", status: StatusOK, desc: "d", body: ""},
		{name: "colon", text: "---\nname: colon\ndescription: Use when: the user asks\n---\nb", status: StatusWarning, desc: "Use when: the user asks", body: "b",
			diags: []string{"SKILL.md:3: warning: value has an unquoted colon"}},
		{name: "broken", text: "---\nname: broken\ndescription: [oops\n---\nb", status: StatusBroken,
			diags: []string{"skills/broken/SKILL.md:3: error: frontmatter: did not find expected ',' or ']'"}},
		{name: "dup", text: "---\nname: dup\nname: dup\n---\nb", status: StatusBroken,
			diags: []string{`skills/dup/SKILL.md:3: error: frontmatter: mapping key "name" already defined at line 2`}},
		{name: "unclosed", text: "---\nname: unclosed\ndescription: d\n\nno fence ever", status: StatusBroken,
			diags: []string{"skills/unclosed/SKILL.md:1: error: frontmatter has no closing --- line"}},
		{name: "list", text: "---\n- a\n---\nb", status: StatusBroken, diags: []string{"SKILL.md:2: error: frontmatter: want a mapping"}},
		{name: "nofm", text: "# Just a body\n", status: StatusWarning, body: "# Just a body", diags: []string{"SKILL.md:1: warning: no frontmatter"}},
		{name: "numname", text: "---\nname: 123\ndescription: d\n---\nb", status: StatusWarning, desc: "d", body: "b",
			diags: []string{"SKILL.md:2: warning: name is not a string", `name "123" does not match "numname"`}},
		{name: "badmeta", text: "---\nname: badmeta\ndescription: d\nmetadata: '{not json'\n---\nb", status: StatusWarning, desc: "d", body: "b",
			diags: []string{"SKILL.md:4: warning: metadata is a string but not a JSON object"}},
	}
	files := map[string]string{}
	for _, tc := range tests {
		files["skills/"+tc.name+"/SKILL.md"] = tc.text
	}
	set := load(t, files, noBuiltins(env(nil, nil, "linux")))
	if len(set.Skills) != len(tests) {
		t.Fatalf("got %d skills, want %d", len(set.Skills), len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sk, ok := set.Get(tc.name)
			if !ok {
				t.Fatal("not loaded")
			}
			if sk.Status != tc.status {
				t.Errorf("status %s, want %s (diags %q)", sk.Status, tc.status, diagStrings(sk.Diagnostics))
			}
			if tc.status != StatusBroken {
				if sk.Description() != tc.desc || sk.Always() != tc.always || sk.Body != tc.body {
					t.Errorf("got desc %q always %v body %q; want %q %v %q", sk.Description(), sk.Always(), sk.Body, tc.desc, tc.always, tc.body)
				}
			}
			got := diagStrings(sk.Diagnostics)
			if len(got) != len(tc.diags) {
				t.Fatalf("diagnostics %q, want %d like %q", got, len(tc.diags), tc.diags)
			}
			for i, want := range tc.diags {
				if !strings.Contains(got[i], want) {
					t.Errorf("diagnostic %d = %q, want it to contain %q", i, got[i], want)
				}
			}
		})
	}
}

func TestAliasBombRefusedQuickly(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\nname: bomb\ndescription: d\na00: &a00 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 12; i++ {
		p := "*a" + itoa(i-1)
		b.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [" + strings.Repeat(p+", ", 9) + p + "]\n")
	}
	b.WriteString("---\nbody\n")
	start := time.Now()
	set := load(t, map[string]string{"skills/bomb/SKILL.md": b.String(), "skills/ok/SKILL.md": skillMD("ok", "fine")}, noBuiltins(env(nil, nil, "linux")))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	sk, _ := set.Get("bomb")
	if sk.Status != StatusBroken || !strings.Contains(diagStrings(sk.Diagnostics)[0], "aliases expand its") {
		t.Errorf("bomb: status %s, diags %q", sk.Status, diagStrings(sk.Diagnostics))
	}
	if ok, _ := set.Get("ok"); ok.Status != StatusOK {
		t.Errorf("a neighbour of the bomb is %s", ok.Status)
	}
	// A few honest aliases are fine.
	set = load(t, map[string]string{"skills/alias/SKILL.md": "---\nname: alias\ndescription: &d shared\nlicense: *d\n---\nb"}, noBuiltins(env(nil, nil, "linux")))
	if sk, _ := set.Get("alias"); sk.Status != StatusOK || sk.Frontmatter.License != "shared" {
		t.Errorf("alias: %s %q %q", sk.Status, sk.Frontmatter.License, diagStrings(sk.Diagnostics))
	}
}

// itoa is a two-digit number, so names sort in numeric order.
func itoa(i int) string { return fmt.Sprintf("%02d", i) }

func TestHugeFileRefused(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"skills/ok/SKILL.md": skillMD("ok", "fine")})
	p := filepath.Join(dir, "skills/huge/SKILL.md")
	os.MkdirAll(filepath.Dir(p), 0o755)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("---\nname: huge\ndescription: d\n---\n")
	if err := f.Truncate(50 << 20); err != nil { // sparse: 50 MB without writing it
		t.Fatal(err)
	}
	f.Close()
	set := New(openWS(t, dir), noBuiltins(env(nil, nil, "linux"))).Load()
	sk, _ := set.Get("huge")
	if sk == nil || sk.Status != StatusBroken || sk.Diagnostics[0].Code != "read.too-large" {
		t.Fatalf("huge: %+v", sk)
	}
	if ok, _ := set.Get("ok"); ok.Status != StatusOK {
		t.Error("neighbour affected")
	}
}

func TestSymlinkOutRefused(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"evil/SKILL.md": skillMD("evil", "steals")})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"skills/ok/SKILL.md": skillMD("ok", "fine")})
	if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(dir, "skills/evil")); err != nil {
		t.Skip(err)
	}
	set := New(openWS(t, dir), noBuiltins(env(nil, nil, "linux"))).Load()
	sk, _ := set.Get("evil")
	if sk == nil || sk.Status != StatusBroken || sk.Diagnostics[0].Code != "read.outside" || sk.Body != "" {
		t.Fatalf("evil: %+v", sk)
	}
	if got := sk.Diagnostics[0].String(); got != "skills/evil/SKILL.md: error: resolves outside the workspace (resolves to a path outside)" {
		t.Errorf("diagnostic %q", got)
	}
	if len(set.Usable()) != 1 {
		t.Errorf("usable: %d", len(set.Usable()))
	}
}

func TestDiscoveryAndPrecedence(t *testing.T) {
	extra := t.TempDir()
	writeFiles(t, extra, map[string]string{
		"pdf/SKILL.md":    skillMD("pdf", "extra pdf"),
		"shared/SKILL.md": skillMD("shared", "extra shared"),
		"README.md":       "not a skill",
	})
	builtins := fstest.MapFS{
		"builtin/shared/SKILL.md": {Data: []byte(skillMD("shared", "builtin shared"))},
		"builtin/only/SKILL.md":   {Data: []byte(skillMD("only", "builtin only"))},
		"builtin/pdf/SKILL.md":    {Data: []byte(skillMD("pdf", "builtin pdf"))},
	}
	opts := env(nil, nil, "linux")
	opts.Builtins = builtins
	opts.Paths = []string{extra, "more"}
	set := load(t, map[string]string{
		"skills/pdf/SKILL.md":        skillMD("pdf", "workspace pdf"),
		"skills/pdf/references/x.md": "not a skill",
		"skills/notes.md":            "not a skill either",
		"skills/empty/README.md":     "a folder without SKILL.md",
		"skills/LICENSE":             "x",
		"agent/skills/churn.md":      skillMD("churn", "flat churn"),
		"agent/skills/pdf.md":        skillMD("pdf", "flat pdf"),
		"agent/skills/notes.txt":     "ignored",
		"agent/skills/sub/SKILL.md":  skillMD("sub", "nested, not flat"),
		"more/inner/SKILL.md":        skillMD("inner", "relative extra"),
		"skills/.hidden/SKILL.md":    skillMD("hidden", "dot folders are skipped"),
	}, opts)
	var got []string
	for _, sk := range set.Skills {
		got = append(got, sk.Name+" "+string(sk.Source)+" "+string(sk.Status)+" "+sk.Description())
	}
	want := []string{
		"churn workspace ok flat churn",
		"inner extra ok relative extra",
		"only builtin ok builtin only",
		"pdf workspace ok workspace pdf",
		"pdf workspace shadowed flat pdf",
		"pdf extra shadowed extra pdf",
		"pdf builtin shadowed builtin pdf",
		"shared extra ok extra shared",
		"shared builtin shadowed builtin shared",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	pdf, _ := set.Get("pdf")
	if pdf.Location != "skills/pdf/SKILL.md" {
		t.Errorf("location %q", pdf.Location)
	}
	b, _ := set.Get("only")
	if !strings.HasPrefix(b.Location, testCache+"/builtin/") || !strings.HasSuffix(b.Location, "/only/SKILL.md") || b.Path != "builtin/only/SKILL.md" {
		t.Errorf("builtin location %q, path %q", b.Location, b.Path)
	}
	if s, ok := set.ByLocation(b.Location); !ok || s != b {
		t.Error("ByLocation did not find the built-in")
	}
	if set.Skills[5].ShadowedBy != "skills/pdf/SKILL.md" {
		t.Errorf("shadowed by %q", set.Skills[5].ShadowedBy)
	}
	// Extra folder outside the workspace: absolute path, as configured.
	sh, _ := set.Get("shared")
	if sh.Path != filepath.Join(extra, "shared/SKILL.md") {
		t.Errorf("extra path %q", sh.Path)
	}
}

func TestExtraPathClimbingOutRefused(t *testing.T) {
	opts := noBuiltins(env(nil, nil, "linux"))
	opts.Paths = []string{"../elsewhere", "/no/such/folder/anywhere"}
	set := load(t, map[string]string{"skills/a/SKILL.md": skillMD("a", "d")}, opts)
	got := diagStrings(set.Diagnostics)
	if len(got) != 2 || !strings.Contains(got[0], "climbs out of the workspace") || !strings.Contains(got[1], "/no/such/folder/anywhere: warning: skills path") {
		t.Errorf("diagnostics %q", got)
	}
	if len(set.Usable()) != 1 {
		t.Error("the workspace skill should still load")
	}
}

func TestAbsolutePaths(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"skills/a/SKILL.md": skillMD("a", "d")})
	opts := env(nil, nil, "linux")
	opts.AbsolutePaths = true
	set := New(openWS(t, dir), opts).Load()
	a, _ := set.Get("a")
	real, _ := filepath.EvalSymlinks(dir)
	if a.Location != filepath.Join(real, "skills/a/SKILL.md") || a.Path != "skills/a/SKILL.md" {
		t.Errorf("location %q path %q", a.Location, a.Path)
	}
	w, _ := set.Get("write-skill")
	if !strings.HasPrefix(w.Location, testCache+"/builtin/") || strings.HasPrefix(w.Location, real) {
		t.Errorf("builtin location %q", w.Location)
	}
}

func TestValidation(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct{ folder, fm, want string }{
		{"good-name", "name: good-name\ndescription: d", ""},
		{"Bad", "name: Bad\ndescription: d", `name "Bad" should be lowercase`},
		{"-lead", "name: -lead\ndescription: d", `name "-lead" should be lowercase`},
		{"trail-", "name: trail-\ndescription: d", `should be lowercase`},
		{"dou--ble", "name: dou--ble\ndescription: d", `should be lowercase`},
		{long, "name: " + long + "\ndescription: d", "name is 65 characters; the limit is 64"},
		{"other", "name: mismatch\ndescription: d", `name "mismatch" does not match "other"`},
		{"noname", "description: d", `name is missing; using "noname"`},
		{"nodesc", "name: nodesc", "description is missing or empty"},
		{"longdesc", "name: longdesc\ndescription: " + strings.Repeat("é", 1025), "description is 1025 characters; the limit is 1024"},
		{"okdesc", "name: okdesc\ndescription: " + strings.Repeat("é", 1024), ""},
		{"compat", "name: compat\ndescription: d\ncompatibility: " + strings.Repeat("x", 501), "compatibility is 501 characters; the limit is 500"},
	}
	files := map[string]string{}
	for _, tc := range tests {
		files["skills/"+tc.folder+"/SKILL.md"] = "---\n" + tc.fm + "\n---\nbody"
	}
	set := load(t, files, noBuiltins(env(nil, nil, "linux")))
	for _, tc := range tests {
		sk, ok := set.Get(tc.folder)
		if !ok {
			t.Errorf("%s: missing", tc.folder)
			continue
		}
		got := strings.Join(diagStrings(sk.Diagnostics), "\n")
		if tc.want == "" {
			if got != "" || sk.Status != StatusOK {
				t.Errorf("%s: %s %q", tc.folder, sk.Status, got)
			}
			continue
		}
		if !strings.Contains(got, tc.want) || sk.Status != StatusWarning || sk.Body != "body" {
			t.Errorf("%s: status %s diags %q, want %q", tc.folder, sk.Status, got, tc.want)
		}
	}
}

func TestAvailability(t *testing.T) {
	files := map[string]string{
		"skills/a/SKILL.md": "---\nname: a\ndescription: d\nmetadata: {\"nanobot\":{\"requires\":{\"bins\":[\"gh\",\"jq\"],\"env\":[\"TOKEN\",\"EMPTY\",\"SET\"]}}}\n---\nb",
		"skills/b/SKILL.md": "---\nname: b\ndescription: d\nmetadata: {\"nanobot\":{\"os\":[\"darwin\"]}}\n---\nb",
		"skills/c/SKILL.md": "---\nname: c\ndescription: d\nmetadata:\n  nanobot:\n    requires:\n      bins: [gh]\n    os: [linux]\n---\nb",
	}
	set := load(t, files, noBuiltins(env([]string{"gh"}, map[string]string{"EMPTY": "", "SET": "1"}, "linux")))
	a, _ := set.Get("a")
	if a.Available || a.MissingText() != "CLI: jq, ENV: TOKEN, ENV: EMPTY" {
		t.Errorf("a: %v %q", a.Available, a.MissingText())
	}
	b, _ := set.Get("b")
	if b.Available || b.MissingText() != "OS: darwin" {
		t.Errorf("b: %v %q", b.Available, b.MissingText())
	}
	c, _ := set.Get("c")
	if !c.Available || len(c.Missing) != 0 {
		t.Errorf("c: %v %q", c.Available, c.MissingText())
	}
}

func TestCacheReparsesOnlyChanged(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 20 {
		n := "s" + itoa(i)
		files["skills/"+n+"/SKILL.md"] = skillMD(n, "d")
	}
	writeFiles(t, dir, files)
	l := New(openWS(t, dir), noBuiltins(env(nil, nil, "linux")))
	l.Load()
	if n := l.parses.Load(); n != 20 {
		t.Fatalf("cold load parsed %d files", n)
	}
	l.Load()
	if n := l.parses.Load(); n != 20 {
		t.Fatalf("warm load parsed %d more", n-20)
	}
	p := filepath.Join(dir, "skills/s07/SKILL.md")
	if err := os.WriteFile(p, []byte(skillMD("s07", "changed, and longer")), 0o644); err != nil {
		t.Fatal(err)
	}
	set := l.Load()
	if n := l.parses.Load(); n != 21 {
		t.Fatalf("after one change parsed %d more, want 1", n-20)
	}
	if sk, _ := set.Get("s07"); sk.Description() != "changed, and longer" {
		t.Errorf("stale: %q", sk.Description())
	}
	os.RemoveAll(filepath.Join(dir, "skills/s03"))
	set = l.Load()
	if _, ok := set.Get("s03"); ok || len(l.parsed.m) != 19 {
		t.Errorf("removed skill still there (cache %d)", len(l.parsed.m))
	}
}

func TestTwoWorkspacesIsolated(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	writeFiles(t, d1, map[string]string{"skills/one/SKILL.md": skillMD("one", "d")})
	writeFiles(t, d2, map[string]string{"skills/two/SKILL.md": skillMD("two", "d")})
	opts := noBuiltins(env(nil, nil, "linux"))
	s1 := New(openWS(t, d1), opts).Load()
	s2 := New(openWS(t, d2), opts).Load()
	if _, ok := s1.Get("two"); ok {
		t.Error("workspace 1 sees workspace 2's skill")
	}
	if _, ok := s2.Get("one"); ok {
		t.Error("workspace 2 sees workspace 1's skill")
	}
}

func TestBuiltinsAreValid(t *testing.T) {
	set := New(workspace.OpenFS(fstest.MapFS{}), env(nil, nil, "linux")).Load()
	if len(set.Skills) < 2 {
		t.Fatalf("only %d built-in skills", len(set.Skills))
	}
	for _, sk := range set.Skills {
		if sk.Status != StatusOK || sk.Source != SourceBuiltin || sk.Body == "" {
			t.Errorf("%s: %s %q", sk.Name, sk.Status, diagStrings(sk.Diagnostics))
		}
	}
}
