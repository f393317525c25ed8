package workspace_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// copyTree copies the folder src (an fs.FS) to dst.
func copyTree(t *testing.T, src fs.FS, dst string) {
	t.Helper()
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// nextChange waits for the next change on ch.
func nextChange(t *testing.T, ch <-chan workspace.Change, what string) workspace.Change {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatalf("%s: feed closed", what)
		}
		if c.Err != nil {
			t.Fatalf("%s: %v", what, c.Err)
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no change within 10s", what)
	}
	return workspace.Change{}
}

// One change feed: after one render, an edit to a file of each kind the
// prompt reads from (the root, agent/prompts/, agent/dialects/, databases/,
// skills/, agent/skills/, memory/) reaches a subscriber, names the file,
// and the re-render shows the edit. A file nobody looked for does not.
func TestChangeFeedEachKind(t *testing.T) {
	root := t.TempDir()
	copyTree(t, os.DirFS("../examples/analyst"), root)
	extra := map[string]string{
		"agent/dialects/postgres.md": "## SQL\n\n- Quote identifiers with double quotes.\n",
		"skills/notes/SKILL.md":      "---\nname: notes\ndescription: Keep notes of findings\n---\nbody\n",
		"memory/MEMORY.md":           "- The fiscal year starts in February.\n",
	}
	for rel, text := range extra {
		os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755)
		os.WriteFile(filepath.Join(root, rel), []byte(text), 0o644)
	}
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	feed, cancel, err := ws.Subscribe(30 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	b := prompt.New(ws)
	defer b.Close()
	render := func() string {
		t.Helper()
		res, err := b.Render(context.Background(), prompt.Options{Channel: "slack"})
		if res == nil {
			t.Fatal(err)
		}
		return res.Prompt
	}
	before := render()

	// Nothing looked for this name: no change.
	os.WriteFile(filepath.Join(root, ".AGENTS.md.swp"), []byte("x"), 0o644)
	select {
	case c := <-feed:
		if !slices.ContainsFunc(c.Paths, func(p string) bool { return !strings.HasSuffix(p, ".swp") }) {
			t.Errorf("an unread file reached the feed: %v", c.Paths)
		}
	case <-time.After(300 * time.Millisecond):
	}

	real, _ := filepath.EvalSymlinks(root)
	edits := []struct{ kind, rel, marker string }{
		{"root", "RULES.md", "Marker-root-7c1"},
		{"agent/prompts", "agent/prompts/slack.md", "Marker-prompts-7c2"},
		{"agent/dialects", "agent/dialects/postgres.md", "Marker-dialects-7c3"},
		{"databases", "databases/type=postgres/database=warehouse7c4", "warehouse7c4"},
		{"skills", "skills/notes/SKILL.md", "Marker-skills-7c5"},
		{"agent/skills", "agent/skills/revenue.md", "Marker-flat-skills-7c6"},
		{"memory", "memory/MEMORY.md", "Marker-memory-7c7"},
	}
	for _, e := range edits {
		p := filepath.Join(root, filepath.FromSlash(e.rel))
		if e.kind == "databases" {
			// The prompt reads databases/ as folders: a new connection.
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			c := nextChange(t, feed, e.kind)
			if !slices.Contains(c.Paths, filepath.Join(real, filepath.FromSlash(e.rel))) {
				t.Errorf("%s: change names %v, not %s", e.kind, c.Paths, e.rel)
			}
			if after := render(); !strings.Contains(after, e.marker) {
				t.Errorf("%s: the re-render does not show %s", e.kind, e.rel)
			}
			continue
		}
		old, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(old)
		if strings.HasPrefix(e.rel, "skills/") || strings.HasPrefix(e.rel, "agent/skills/") {
			text = strings.Replace(text, "description: ", "description: "+e.marker+" ", 1)
		} else {
			text += "\n- " + e.marker + "\n"
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c := nextChange(t, feed, e.kind)
		if !slices.Contains(c.Paths, filepath.Join(real, filepath.FromSlash(e.rel))) {
			t.Errorf("%s: change names %v, not %s", e.kind, c.Paths, e.rel)
		}
		if after := render(); !strings.Contains(after, e.marker) {
			t.Errorf("%s: the re-render does not show the edit to %s", e.kind, e.rel)
		}
	}
	if before == render() {
		t.Error("nothing changed")
	}

	// A new file where the render looked for one (a new skill folder) is
	// reported too.
	os.MkdirAll(filepath.Join(root, "skills", "later"), 0o755)
	nextChange(t, feed, "new skill folder")
	render()
	os.WriteFile(filepath.Join(root, "skills", "later", "SKILL.md"), []byte("---\nname: later\ndescription: Arrived later\n---\nb\n"), 0o644)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(render(), "Arrived later") {
		nextChange(t, feed, "new SKILL.md")
		if time.Now().After(deadline) {
			t.Fatal("the new skill never showed")
		}
	}
}

// Close ends every subscription; cancel twice is fine.
func TestChangeFeedClose(t *testing.T) {
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	feed, cancel, err := ws.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
	if _, ok := <-feed; ok {
		t.Error("feed still open after Close")
	}
	cancel()
	cancel()
	if _, _, err := workspace.OpenFS(os.DirFS(".")).Subscribe(0); err == nil {
		t.Error("an fs.FS workspace accepted a subscription")
	}
}
