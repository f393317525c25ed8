package workspace_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/loomctx/loom/workspace"
)

// genStep runs read and reports whether Generation moved.
func genStep(t *testing.T, ws *workspace.Workspace, read func()) bool {
	t.Helper()
	before := ws.Generation()
	read()
	after := ws.Generation()
	if after < before {
		t.Fatalf("Generation went down: %d -> %d", before, after)
	}
	return after != before
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGenerationLoad(t *testing.T) {
	root := t.TempDir()
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	load := func() { ws.Load("notes/a.md") }
	steps := []struct {
		name   string
		change func()
		bump   bool
	}{
		{"missing, never loaded", func() {}, false},
		{"still missing", func() {}, false},
		{"created", func() { write(t, filepath.Join(root, "notes", "a.md"), "one\n") }, true},
		{"unchanged", func() {}, false},
		{"rewritten", func() { write(t, filepath.Join(root, "notes", "a.md"), "two, longer\n") }, true},
		{"unchanged again", func() {}, false},
		{"now binary", func() { write(t, filepath.Join(root, "notes", "a.md"), "bin\x00ary") }, true},
		{"still binary", func() {}, false},
		{"deleted", func() { os.Remove(filepath.Join(root, "notes", "a.md")) }, true},
		{"still deleted", func() {}, false},
		{"folder replaced by a file", func() { os.Remove(filepath.Join(root, "notes")); write(t, filepath.Join(root, "notes"), "x") }, true},
	}
	for _, s := range steps {
		s.change()
		if got := genStep(t, ws, load); got != s.bump {
			t.Errorf("%s: bumped = %v, want %v", s.name, got, s.bump)
		}
	}
}

func TestGenerationLoadKeepsPointer(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a.md"), "a\n")
	ws, _ := workspace.Open(root)
	a, _ := ws.Load("a.md")
	if genStep(t, ws, func() {
		if b, _ := ws.Load("a.md"); b != a {
			t.Error("an unchanged file got a new *File")
		}
	}) {
		t.Error("an unchanged file bumped Generation")
	}
}

func TestGenerationReadDir(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "d", "a.md"), "a")
	ws, _ := workspace.Open(root)
	list := func() { ws.ReadDir("d") }
	steps := []struct {
		name   string
		change func()
		bump   bool
	}{
		{"first listing", func() {}, true},
		{"same listing", func() {}, false},
		{"content change only", func() { write(t, filepath.Join(root, "d", "a.md"), "longer") }, false},
		{"file added", func() { write(t, filepath.Join(root, "d", "b.md"), "b") }, true},
		{"same again", func() {}, false},
		{"file became a folder", func() {
			os.Remove(filepath.Join(root, "d", "b.md"))
			os.Mkdir(filepath.Join(root, "d", "b.md"), 0o755)
		}, true},
		{"folder removed", func() { os.RemoveAll(filepath.Join(root, "d")) }, true},
		{"still removed", func() {}, false},
	}
	for _, s := range steps {
		s.change()
		if got := genStep(t, ws, list); got != s.bump {
			t.Errorf("%s: bumped = %v, want %v", s.name, got, s.bump)
		}
	}
}

func TestGenerationIsDirExists(t *testing.T) {
	root := t.TempDir()
	ws, _ := workspace.Open(root)
	p := filepath.Join(root, "x")
	for _, probe := range []struct {
		name string
		read func()
	}{
		{"IsDir", func() { ws.IsDir("x") }},
		{"Exists", func() { ws.Exists("x") }},
	} {
		os.RemoveAll(p)
		if !genStep(t, ws, probe.read) {
			t.Errorf("%s: the first answer did not bump", probe.name)
		}
		if genStep(t, ws, probe.read) {
			t.Errorf("%s: the same answer bumped", probe.name)
		}
		os.Mkdir(p, 0o755)
		if !genStep(t, ws, probe.read) {
			t.Errorf("%s: a flipped answer did not bump", probe.name)
		}
		if genStep(t, ws, probe.read) {
			t.Errorf("%s: the same answer bumped", probe.name)
		}
	}
	// A folder replaced by a file flips IsDir but not Exists.
	os.Remove(p)
	write(t, p, "f")
	if !genStep(t, ws, func() { ws.IsDir("x") }) {
		t.Error("IsDir flip did not bump")
	}
	if genStep(t, ws, func() { ws.Exists("x") }) {
		t.Error("Exists bumped though it still exists")
	}
}

func TestGenerationOpenFS(t *testing.T) {
	ws := workspace.OpenFS(fstest.MapFS{"a.md": {Data: []byte("a")}, "d/b.md": {Data: []byte("b")}})
	reads := func() {
		ws.Load("a.md")
		ws.Load("missing.md")
		ws.ReadDir("d")
		ws.IsDir("d")
		ws.Exists("d/b.md")
	}
	if !genStep(t, ws, reads) {
		t.Error("first reads did not bump")
	}
	if genStep(t, ws, reads) {
		t.Error("repeated reads bumped")
	}
	if f, err := ws.Load("a.md"); err != nil || f.Text != "a" {
		t.Errorf("%v %v", f, err)
	}
}
