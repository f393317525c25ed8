package examples

import (
	"encoding/json"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/starter"
	"github.com/loomctx/loom/workspace"
)

func TestNames(t *testing.T) {
	if got, want := Names(), []string{"analyst", "assistant"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

func TestFSUnknown(t *testing.T) {
	_, err := FS("coder")
	if err == nil {
		t.Fatal("FS(coder) succeeded")
	}
	for _, s := range []string{`"coder"`, "analyst", "assistant"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
}

func mustFS(t *testing.T, name string) fs.FS {
	t.Helper()
	fsys, err := FS(name)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func walk(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func read(t *testing.T, fsys fs.FS, rel string) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, rel)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWellFormed reads every file through the workspace door, as render
// will, and checks the text is clean: nothing refused, nothing changed by
// normalisation, one final newline, no trailing blanks, and no file still
// equal to a starter template (which the prompt would leave out).
func TestWellFormed(t *testing.T) {
	for _, name := range Names() {
		fsys := mustFS(t, name)
		ws := workspace.OpenFS(fsys)
		for _, rel := range walk(t, fsys) {
			raw := read(t, fsys, rel)
			where := name + "/" + rel
			f, err := ws.Load(rel)
			if err != nil {
				t.Errorf("%s: refused by the workspace door: %v", where, err)
				continue
			}
			if f.Text != raw {
				t.Errorf("%s: the door changed the text (CR, BOM or bad UTF-8)", where)
			}
			if raw == "" || !utf8.ValidString(raw) {
				t.Errorf("%s: empty or invalid UTF-8", where)
				continue
			}
			if !strings.HasSuffix(raw, "\n") || strings.HasSuffix(raw, "\n\n") {
				t.Errorf("%s: must end with exactly one newline", where)
			}
			for i, line := range strings.Split(raw, "\n") {
				if strings.TrimRight(line, " \t") != line {
					t.Errorf("%s:%d: trailing whitespace", where, i+1)
				}
			}
			if starter.IsUntouched(rel, raw) {
				t.Errorf("%s: still the starter template", where)
			}
		}
	}
}

func TestConfig(t *testing.T) {
	for _, name := range Names() {
		c, err := config.Parse(name+"/loom.yaml", []byte(read(t, mustFS(t, name), "loom.yaml")))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if c.Preset != name {
			t.Errorf("%s/loom.yaml: preset %q, want %q", name, c.Preset, name)
		}
		if c.Name == "" || c.Description == "" || c.Emoji == "" {
			t.Errorf("%s/loom.yaml: name, description and emoji must all be set: %+v", name, c)
		}
		if _, err := time.LoadLocation(c.Timezone); err != nil || c.Timezone == "" {
			t.Errorf("%s/loom.yaml: timezone %q: %v", name, c.Timezone, err)
		}
	}
}

// frontmatter parses the YAML block at the top of a skill file.
func frontmatter(t *testing.T, where, text string) map[string]any {
	t.Helper()
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		t.Fatalf("%s: no frontmatter", where)
	}
	block, body, ok := strings.Cut(rest, "\n---\n")
	if !ok || strings.TrimSpace(body) == "" {
		t.Fatalf("%s: frontmatter not closed, or no body", where)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(block), &m); err != nil {
		t.Fatalf("%s: frontmatter: %v", where, err)
	}
	if m["name"] == nil || m["description"] == nil {
		t.Errorf("%s: frontmatter needs name and description", where)
	}
	return m
}

// nanobotMeta is the one-line JSON in a skill's metadata key.
type nanobotMeta struct {
	Nanobot struct {
		Emoji    string `json:"emoji"`
		Always   bool   `json:"always"`
		Requires struct {
			Bins []string `json:"bins"`
			Env  []string `json:"env"`
		} `json:"requires"`
	} `json:"nanobot"`
}

func TestAssistant(t *testing.T) {
	fsys := mustFS(t, "assistant")
	for _, rel := range []string{"AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "memory/MEMORY.md", "memory/HISTORY.md"} {
		if read(t, fsys, rel) == "" {
			t.Errorf("%s: empty", rel)
		}
	}
	if h := read(t, fsys, "memory/HISTORY.md"); strings.Count(h, "\n[20") < 2 || !strings.HasPrefix(h, "[20") {
		t.Errorf("memory/HISTORY.md: want at least three [YYYY-MM-DD HH:MM] entries")
	}

	skills, _ := fs.Glob(fsys, "skills/*/SKILL.md")
	if len(skills) < 3 {
		t.Fatalf("skills: %q, want at least 3", skills)
	}
	var bins, envs, always []string
	for _, rel := range skills {
		m := frontmatter(t, rel, read(t, fsys, rel))
		if m["name"] != path.Base(path.Dir(rel)) {
			t.Errorf("%s: name %q differs from the folder name", rel, m["name"])
		}
		if m["always"] == true {
			always = append(always, rel)
		}
		if m["metadata"] == nil {
			continue
		}
		// nanobot reads the line after "metadata:" as a JSON string; real
		// YAML reads the same line as a flow mapping. Both must hold the
		// requirements, so check the raw line and the parsed value.
		line := metadataLine(read(t, fsys, rel))
		var meta, parsed nanobotMeta
		if err := json.Unmarshal([]byte(line), &meta); err != nil {
			t.Errorf("%s: metadata is not one line of JSON: %v", rel, err)
		}
		b, _ := json.Marshal(m["metadata"])
		if err := json.Unmarshal(b, &parsed); err != nil || !reflect.DeepEqual(meta, parsed) {
			t.Errorf("%s: metadata reads differently as YAML (%s) and as JSON (%s)", rel, b, line)
		}
		bins = append(bins, meta.Nanobot.Requires.Bins...)
		envs = append(envs, meta.Nanobot.Requires.Env...)
	}
	if !slices.Contains(bins, "curl") {
		t.Errorf("no skill requires the curl binary (bins %q)", bins)
	}
	if len(envs) == 0 {
		t.Errorf("no skill requires an environment variable")
	}
	if len(always) != 1 {
		t.Errorf("always-on skills %q, want exactly one", always)
	}
}

// metadataLine returns the value of the "metadata:" line, as nanobot's
// line-based frontmatter reader sees it.
func metadataLine(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, "metadata:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestAnalyst(t *testing.T) {
	fsys := mustFS(t, "analyst")
	if read(t, fsys, "RULES.md") == "" {
		t.Error("RULES.md: empty")
	}

	// Connections as the analyst preset finds them: folder names only.
	types := map[string]bool{}
	typeDirs, err := fs.ReadDir(fsys, "databases")
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range typeDirs {
		typ, ok := strings.CutPrefix(td.Name(), "type=")
		if !td.IsDir() || !ok || typ == "" {
			continue
		}
		dbs, _ := fs.ReadDir(fsys, "databases/"+td.Name())
		for _, db := range dbs {
			if db.IsDir() && strings.HasPrefix(db.Name(), "database=") && len(db.Name()) > len("database=") {
				types[typ] = true
			}
		}
	}
	if len(types) < 2 || !types["postgres"] || !types["bigquery"] {
		t.Errorf("connection types %v, want postgres and bigquery at least", types)
	}
	if cols, _ := fs.Glob(fsys, "databases/type=*/database=*/schema=*/table=*/columns.md"); len(cols) < 3 {
		t.Errorf("columns.md files %q, want at least 3", cols)
	}

	flat, _ := fs.Glob(fsys, "agent/skills/*.md")
	if !slices.Contains(flat, "agent/skills/revenue.md") {
		t.Errorf("flat skills %q, want agent/skills/revenue.md", flat)
	}
	for _, rel := range flat {
		frontmatter(t, rel, read(t, fsys, rel))
	}

	// system.md would replace the default prompt for every render; the
	// example must show the default, so only a channel override exists.
	if _, err := fs.Stat(fsys, "agent/prompts/system.md"); err == nil {
		t.Error("agent/prompts/system.md exists; the default prompt would never show")
	}
	if s := read(t, fsys, "agent/prompts/slack.md"); !strings.Contains(s, "{{ default_prompt }}") {
		t.Error("agent/prompts/slack.md: want it to extend the default prompt with {{ default_prompt }}")
	}
}
