package workspace_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/workspace"
)

func openWS(t *testing.T) (*workspace.Workspace, string, string) {
	t.Helper()
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return ws, root, outside
}

// Class: paths. Every write stays inside the workspace and passes through no
// symlink, even one that points inside.
func TestWritesStayInside(t *testing.T) {
	ws, root, outside := openWS(t)
	os.WriteFile(filepath.Join(outside, "victim"), []byte("keep\n"), 0o644)
	os.Mkdir(filepath.Join(root, "real"), 0o755)
	os.Symlink(outside, filepath.Join(root, "memory"))                              // folder link out
	os.Symlink(filepath.Join(outside, "victim"), filepath.Join(root, "HISTORY.md")) // file link out
	os.Symlink("real", filepath.Join(root, "inner"))                                // folder link in
	os.Symlink("real/x.md", filepath.Join(root, "x.md"))                            // file link in

	writers := map[string]func(rel string) error{
		"WriteFile":  func(rel string) error { return ws.WriteFile(rel, []byte("evil\n"), 0o600) },
		"AppendFile": func(rel string) error { return ws.AppendFile(rel, []byte("evil\n"), 0o600) },
		"MkdirAll":   func(rel string) error { return ws.MkdirAll(rel, 0o700) },
		"OpenFile": func(rel string) error {
			f, err := ws.OpenFile(rel, os.O_WRONLY|os.O_CREATE, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		},
		"LocalPath": func(rel string) error { _, err := ws.LocalPath(rel); return err },
		"ReadFile":  func(rel string) error { _, err := ws.ReadFile(rel); return err },
	}
	cases := []struct {
		rel  string
		want error
	}{
		{"../outside/victim", workspace.ErrOutside},
		{"/etc/passwd", workspace.ErrOutside},
		{"real/../../outside/victim", workspace.ErrOutside},
		{"", workspace.ErrOutside},
		{"memory/MEMORY.md", workspace.ErrSymlink},
		{"HISTORY.md", workspace.ErrSymlink},
		{"inner/notes.md", workspace.ErrSymlink},
		{"x.md", workspace.ErrSymlink},
	}
	for name, write := range writers {
		for _, c := range cases {
			if name == "MkdirAll" && c.rel == "x.md" {
				continue // a file link is not on the way to a folder... it is the folder: still refused below
			}
			err := write(c.rel)
			if !errors.Is(err, c.want) {
				t.Errorf("%s(%q) = %v, want %v", name, c.rel, err, c.want)
			}
			var re *workspace.RefusedError
			if err != nil && errors.As(err, &re) && !strings.Contains(err.Error(), strings.Split(c.rel, "/")[0]) && c.rel != "" {
				t.Errorf("%s(%q): error %q does not name the path", name, c.rel, err)
			}
		}
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "victim")); string(got) != "keep\n" {
		t.Errorf("outside file changed: %q", got)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside folder gained entries: %v", ents)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "real")); len(ents) != 0 {
		t.Errorf("a write went through an inside link: %v", ents)
	}
	if err := ws.MkdirAll("x.md", 0o700); !errors.Is(err, workspace.ErrSymlink) {
		t.Errorf("MkdirAll over a file link = %v", err)
	}
}

func TestWriteReadBack(t *testing.T) {
	ws, root, _ := openWS(t)
	if err := ws.MkdirAll(".loom/sessions", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteFile(".loom/sessions/a.jsonl", []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ws.AppendFile(".loom/sessions/a.jsonl", []byte("two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ws.ReadFile(".loom/sessions/a.jsonl")
	if err != nil || string(got) != "one\ntwo\n" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	f, err := ws.Load(".loom/sessions/a.jsonl")
	if err != nil || f.Text != "one\ntwo\n" {
		t.Fatalf("Load after writes = %v, %v", f, err)
	}
	if err := ws.WriteFile(".loom/sessions/a.jsonl", []byte("three\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, _ := ws.Load(".loom/sessions/a.jsonl"); f == nil || f.Text != "three\n" {
		t.Fatalf("Load after rewrite = %v", f)
	}
	ents, _ := os.ReadDir(filepath.Join(root, ".loom", "sessions"))
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	p, err := ws.LocalPath(".loom/memory.db")
	if err != nil || p != filepath.Join(root, ".loom", "memory.db") {
		t.Errorf("LocalPath = %q, %v", p, err)
	}
	if err := ws.Remove(".loom/sessions/a.jsonl"); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.ReadFile(".loom/sessions/a.jsonl"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Remove: %v", err)
	}
}

// Class: permissions. Private data is created 0600 in 0700 folders, whatever
// the umask, and a rewrite never widens a file's permissions.
func TestPrivatePermsUnderUmask(t *testing.T) {
	for _, mask := range []int{0o077, 0o022, 0} {
		old := syscall.Umask(mask)
		ws, root, _ := openWS(t)
		must := func(err error) {
			if err != nil {
				syscall.Umask(old)
				t.Fatal(err)
			}
		}
		must(ws.MkdirAll(".loom/sessions", 0o700))
		must(ws.MkdirAll("memory", 0o700))
		must(ws.WriteFile("memory/MEMORY.md", []byte("m\n"), 0o600))
		must(ws.AppendFile("memory/HISTORY.md", []byte("h\n"), 0o600))
		must(ws.AppendFile(".loom/sessions/s.jsonl", []byte("{}\n"), 0o600))
		f, err := ws.OpenFile(".loom/memory.db", os.O_RDWR|os.O_CREATE, 0o600)
		must(err)
		f.Close()
		syscall.Umask(old)
		want := map[string]fs.FileMode{
			".loom": 0o700, ".loom/sessions": 0o700, "memory": 0o700,
			"memory/MEMORY.md": 0o600, "memory/HISTORY.md": 0o600,
			".loom/sessions/s.jsonl": 0o600, ".loom/memory.db": 0o600,
		}
		for rel, perm := range want {
			st, err := os.Stat(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != perm {
				t.Errorf("umask %03o: %s is %v, want %v", mask, rel, got, perm)
			}
		}
		// An existing 0644 file rewritten as private becomes 0600; a 0600 one
		// written with 0644 stays 0600.
		os.WriteFile(filepath.Join(root, "memory", "old.md"), []byte("x"), 0o644)
		os.Chmod(filepath.Join(root, "memory", "old.md"), 0o644)
		must(ws.WriteFile("memory/old.md", []byte("y"), 0o600))
		must(ws.WriteFile("memory/MEMORY.md", []byte("z"), 0o644))
		for rel, perm := range map[string]fs.FileMode{"memory/old.md": 0o600, "memory/MEMORY.md": 0o600} {
			st, _ := os.Stat(filepath.Join(root, rel))
			if st.Mode().Perm() != perm {
				t.Errorf("umask %03o: rewritten %s is %v, want %v", mask, rel, st.Mode().Perm(), perm)
			}
		}
	}
}

// Class: max_file_size, both ways. Raising the cap admits a file the default
// refuses; lowering it refuses a file the default admits; and a write larger
// than the cap is refused, so loom never writes what it would not read.
func TestMaxFileSizeBothWays(t *testing.T) {
	ws, root, _ := openWS(t)
	big := strings.Repeat("b", workspace.DefaultMaxFileSize+10)
	small := strings.Repeat("s", 4000)
	os.WriteFile(filepath.Join(root, "big.md"), []byte(big), 0o644)
	os.WriteFile(filepath.Join(root, "small.md"), []byte(small), 0o644)

	if _, err := ws.Load("big.md"); !errors.Is(err, workspace.ErrTooLarge) {
		t.Fatalf("default cap: big.md = %v, want too large", err)
	}
	ws.SetMaxFileSize(2 << 20)
	if f, err := ws.Load("big.md"); err != nil || len(f.Text) != len(big) {
		t.Fatalf("raised cap: big.md = %v", err)
	}
	if err := ws.WriteFile("big2.md", []byte(big), 0o600); err != nil {
		t.Fatalf("raised cap: writing big = %v", err)
	}

	ws.SetMaxFileSize(1000)
	for _, rel := range []string{"small.md", "big.md"} {
		if _, err := ws.Load(rel); !errors.Is(err, workspace.ErrTooLarge) {
			t.Errorf("lowered cap: %s = %v, want too large", rel, err)
		}
		if _, err := ws.ReadFile(rel); !errors.Is(err, workspace.ErrTooLarge) {
			t.Errorf("lowered cap: ReadFile %s = %v, want too large", rel, err)
		}
	}
	err := ws.WriteFile("memory.md", []byte(small), 0o600)
	if !errors.Is(err, workspace.ErrTooLarge) || !strings.Contains(err.Error(), "max_file_size") {
		t.Errorf("lowered cap: writing 4000 bytes = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "memory.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused write left a file: %v", err)
	}
	ws.SetMaxFileSize(1 << 40)
	if ws.MaxFileSize() != workspace.MaxFileSizeCeiling {
		t.Errorf("cap not clamped: %d", ws.MaxFileSize())
	}
}

// Class: FIFO and other non-regular files. Opening never blocks, and every
// entry point refuses them.
func TestFIFONeverBlocks(t *testing.T) {
	ws, root, _ := openWS(t)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := ws.Load("pipe"); !errors.Is(err, workspace.ErrNotRegular) {
			t.Errorf("Load = %v", err)
		}
		if _, err := ws.ReadFile("pipe"); !errors.Is(err, workspace.ErrNotRegular) {
			t.Errorf("ReadFile = %v", err)
		}
		if err := ws.AppendFile("pipe", []byte("x"), 0o600); !errors.Is(err, workspace.ErrNotRegular) {
			t.Errorf("AppendFile = %v", err)
		}
		if err := ws.WriteFile("pipe", []byte("x"), 0o600); !errors.Is(err, workspace.ErrNotRegular) {
			t.Errorf("WriteFile = %v", err)
		}
		if f, err := ws.OpenFile("pipe", os.O_RDONLY, 0); !errors.Is(err, workspace.ErrNotRegular) {
			t.Errorf("OpenFile = %v", err)
			if f != nil {
				f.Close()
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a FIFO blocked the door")
	}
}

// A write that no read depended on leaves Generation alone; a write to a
// file that was read raises it and is seen at once.
func TestWriteGeneration(t *testing.T) {
	ws, _, _ := openWS(t)
	if err := ws.MkdirAll(".loom/sessions", 0o700); err != nil {
		t.Fatal(err)
	}
	ws.WriteFile("AGENTS.md", []byte("one\n"), 0o600)
	if f, err := ws.Load("AGENTS.md"); err != nil || f.Text != "one\n" {
		t.Fatal(f, err)
	}
	g := ws.Generation()
	if err := ws.AppendFile(".loom/sessions/s.jsonl", []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ws.Generation() != g {
		t.Error("an unread session append raised Generation")
	}
	ws.WriteFile("AGENTS.md", []byte("two\n"), 0o600)
	if ws.Generation() == g {
		t.Error("rewriting a file that was read left Generation alone")
	}
	if f, _ := ws.Load("AGENTS.md"); f == nil || f.Text != "two\n" {
		t.Errorf("the rewrite was not seen: %v", f)
	}
}
