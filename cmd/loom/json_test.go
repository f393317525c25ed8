package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	cmdSkills "github.com/loomctx/loom/cmd/loom/skills"
	cmdTokens "github.com/loomctx/loom/cmd/loom/tokens"
	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
)

// jsonWorkspace is a small workspace whose text has <, > and & in it, so
// that HTML escaping would show, and a skill with a diagnostic.
func jsonWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"AGENTS.md":              "# Agent\n\nAnswer in <b>bold</b> & be brief.\n",
		"skills/demo/SKILL.md":   "---\nname: demo\ndescription: Shows <tags> & more.\n---\nUse it.\n",
		"skills/broken/SKILL.md": "---\nname: [\n---\n",
		"loom.yaml":              "name: Ledger\n",
		"notes.txt":              "count <these> & those\n",
		"history.jsonl":          `{"role":"user","content":"a <b> & c","timestamp":"2026-01-02T03:04:05"}` + "\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runJSON(t *testing.T, args ...string) []byte {
	t.Helper()
	ios, _, out, errOut := cmdutil.Test()
	if code := runWith(ios, args); code != 0 && code != 1 {
		t.Fatalf("loom %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	if out.Len() == 0 {
		t.Fatalf("loom %s: no output; stderr %s", strings.Join(args, " "), errOut)
	}
	return out.Bytes()
}

// TestJSONOutputs runs every command with machine output under --json and
// checks the exporter's rules on what it prints: it round-trips through
// its Go type, nothing is HTML-escaped, every key is snake_case, and the
// top-level fields are the ones pinned in testdata/json/fields.txt (written
// by hand from the types; these shapes are also the HTTP API's bodies).
func TestJSONOutputs(t *testing.T) {
	t.Setenv("LOOM_MEMORY_DB", "")
	dir := jsonWorkspace(t)
	now := "--now=2026-01-02T03:04:05Z"
	ios, _, _, errOut := cmdutil.Test()
	if code := runWith(ios, []string{"memory", "add", "-w", dir, "Prefers <short> answers & tables"}); code != 0 {
		t.Fatalf("memory add: %d %s", code, errOut)
	}

	type check struct {
		name  string
		args  []string
		round func([]byte) error
		text  bool // the output carries the fixture's text, < and & included
	}
	checks := []check{
		{"render", []string{"render", "-w", dir, now, "--json"}, jsonout.RoundTrip[prompt.Result], true},
		{"inspect", []string{"inspect", "-w", dir, now, "--json"}, jsonout.RoundTrip[prompt.Report], false},
		{"tokens", []string{"tokens", "--json", filepath.Join(dir, "notes.txt")}, jsonout.RoundTrip[cmdTokens.Result], false},
		{"skills list", []string{"skills", "list", "-w", dir, "--json"}, jsonout.RoundTrip[[]cmdSkills.ListEntry], true},
		{"skills validate", []string{"skills", "validate", "-w", dir, "--json"}, jsonout.RoundTrip[cmdSkills.ValidateResult], false},
		{"memory list", []string{"memory", "list", "-w", dir, "--json"}, jsonout.RoundTrip[[]memory.Memory], true},
		{"history clean", []string{"history", "clean", filepath.Join(dir, "history.jsonl")}, jsonout.RoundTrip[messages.Message], true},
		{"messages", []string{"messages", "-w", dir, now, "--message", "hi <there> & you", "--json"}, jsonout.RoundTrip[messages.Output], true},
	}
	fields := map[string]string{}
	for _, c := range checks {
		out := runJSON(t, c.args...)
		if err := c.round(out); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if bytes.Contains(out, []byte(`\u003c`)) || bytes.Contains(out, []byte(`\u0026`)) {
			t.Errorf("%s: HTML-escaped output", c.name)
		}
		if c.text && !bytes.Contains(out, []byte("<")) {
			t.Errorf("%s: the fixture's < never reached the output; the escaping check proves nothing", c.name)
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkSnake(t, c.name, v)
		fields[c.name] = strings.Join(topFields(v), " ")
	}

	// --format json is the same as --json where --format exists.
	for _, args := range [][]string{
		{"render", "-w", dir, now},
		{"messages", "-w", dir, now, "--message", "hi"},
	} {
		a := runJSON(t, append(args, "--json")...)
		b := runJSON(t, append(args, "--format", "json")...)
		if !bytes.Equal(a, b) {
			t.Errorf("loom %s: --json and --format json differ", args[0])
		}
	}

	want, err := os.ReadFile(filepath.Join("testdata", "json", "fields.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, fs, _ := strings.Cut(line, ":")
		name, fs = strings.TrimSpace(name), strings.Join(strings.Fields(fs), " ")
		got, ok := fields[name]
		if !ok {
			t.Errorf("fields.txt names %q, which the test does not run", name)
			continue
		}
		if got != fs {
			t.Errorf("%s: top-level fields\n got: %s\nwant: %s", name, got, fs)
		}
		delete(fields, name)
	}
	for name := range fields {
		t.Errorf("%s: no line in testdata/json/fields.txt", name)
	}
}

// topFields lists an object's keys (of its first element for an array),
// and, one level down, "key.sub" for each object-valued key, sorted.
func topFields(v any) []string {
	if a, ok := v.([]any); ok {
		if len(a) == 0 {
			return nil
		}
		v = a[0]
	}
	m, _ := v.(map[string]any)
	var out []string
	for k, sub := range m {
		out = append(out, k)
		if sm, ok := sub.(map[string]any); ok {
			for sk := range sm {
				out = append(out, k+"."+sk)
			}
		}
	}
	slices.Sort(out)
	return out
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkSnake checks every object key, skipping the contents of maps keyed
// by data (none today; add their paths here when one appears).
func checkSnake(t *testing.T, where string, v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			if !snake.MatchString(k) {
				t.Errorf("%s: key %q is not snake_case", where, k)
			}
			checkSnake(t, where+"."+k, sub)
		}
	case []any:
		for _, sub := range v {
			checkSnake(t, where, sub)
		}
	}
}

// Each diagnostic is reported once: on stderr by render and messages, and
// in render's JSON report.
func TestDiagnosticsOnce(t *testing.T) {
	t.Setenv("LOOM_MEMORY_DB", "")
	dir := jsonWorkspace(t)
	for _, args := range [][]string{
		{"render", "-w", dir},
		{"messages", "-w", dir, "--message", "hi"},
		{"inspect", "-w", dir},
	} {
		ios, _, out, errOut := cmdutil.Test()
		runWith(ios, args)
		text := errOut.String() + out.String()
		if !strings.Contains(text, "skills/broken/SKILL.md") {
			t.Fatalf("loom %s: the broken skill is not reported:\n%s", args[0], text)
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(errOut.String(), "\n") {
			if line != "" && seen[line] {
				t.Errorf("loom %s: reported twice: %s", args[0], line)
			}
			seen[line] = true
		}
	}
	var res prompt.Result
	if err := json.Unmarshal(runJSON(t, "render", "-w", dir, "--json"), &res); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range res.Report.Diagnostics {
		if seen[d.String()] {
			t.Errorf("render --json: reported twice: %s", d)
		}
		seen[d.String()] = true
	}
	if len(seen) == 0 {
		t.Error("render --json: no diagnostics; the check proves nothing")
	}
}
