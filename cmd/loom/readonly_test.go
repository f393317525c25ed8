package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/skills"
)

// tree lists every path under dir, relative to it.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Reading a workspace writes nothing into it: render, inspect and messages
// leave the folder as it was (no .loom/, no built-in skill files), and the
// built-in skills the prompt lists are real files in loom's cache folder.
func TestReadingWritesNothing(t *testing.T) {
	dir := t.TempDir()
	cache := t.TempDir()
	t.Setenv(skills.EnvCacheDir, cache)
	t.Setenv("LOOM_MEMORY_DB", "")
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Answer in French.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	for _, args := range [][]string{
		{"render", "-w", dir},
		{"render", "-w", dir, "--preset", "analyst", "--tools", "execute_sql"},
		{"inspect", "-w", dir},
		{"messages", "-w", dir, "--message", "hi"},
		{"skills", "list", "-w", dir},
	} {
		ios, _, out, errOut := cmdutil.Test()
		if code := runWith(ios, args); code != 0 {
			t.Fatalf("loom %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		if after := tree(t, dir); !slices.Equal(before, after) {
			t.Fatalf("loom %s wrote into the workspace: %v, was %v", strings.Join(args, " "), after, before)
		}
		if args[0] == "render" && !strings.Contains(out.String(), cache+"/builtin/") {
			t.Errorf("loom %s: the built-in skills are not listed in the cache folder:\n%s", strings.Join(args, " "), out)
		}
	}
	// Each listed built-in skill is a file the agent can read.
	ios, _, out, _ := cmdutil.Test()
	runWith(ios, []string{"render", "-w", dir})
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimSpace(line)
		if loc, ok := strings.CutPrefix(line, "<location>"+cache); ok {
			loc = strings.TrimSuffix(loc, "</location>")
			if _, err := os.Stat(cache + loc); err != nil {
				t.Errorf("listed built-in skill is not a file: %v", err)
			}
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d built-in skill locations in the prompt, want 3:\n%s", n, out)
	}
}

// A render of a folder with no workspace files (an empty or wrong -w) still
// prints loom's defaults, but says so; a workspace with any of them does not.
func TestRenderEmptyFolderWarns(t *testing.T) {
	t.Setenv(skills.EnvCacheDir, t.TempDir())
	empty := t.TempDir()
	for _, cmd := range [][]string{{"render"}, {"inspect"}, {"messages", "--message", "hi"}} {
		ios, _, out, errOut := cmdutil.Test()
		args := append(append([]string{}, cmd...), "-w", empty)
		// inspect prints its diagnostics in the report, the others on stderr
		code := runWith(ios, args)
		said := errOut.String() + out.String()
		if code != 0 || !strings.Contains(said, "warning: no workspace files in "+empty) || !strings.Contains(said, "loom init") {
			t.Errorf("loom %s in an empty folder: exit %d, stderr %q", cmd[0], code, errOut)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("the empty folder was written to: %v", entries)
	}
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "RULES.md"), []byte("Use EUR.\n"), 0o644)
	ios, _, _, errOut := cmdutil.Test()
	if code := runWith(ios, []string{"render", "-w", ws}); code != 0 || strings.Contains(errOut.String(), "no workspace files") {
		t.Errorf("a workspace with RULES.md: exit %d, stderr %q", code, errOut)
	}
}
