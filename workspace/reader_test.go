package workspace_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/loomctx/loom/workspace"
)

func setup(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(root, "a.md"):             "hello\n",
		filepath.Join(root, "sub", "b.md"):      "b\n",
		filepath.Join(root, "..notes.md"):       "dotdot child\n",
		filepath.Join(outside, "secret.md"):     "secret\n",
		filepath.Join(root, "crlf.md"):          "\xEF\xBB\xBFone\r\ntwo\r\n",
		filepath.Join(root, "bad.md"):           "ok \xff\xfe end",
		filepath.Join(root, "bin.md"):           "text\x00more",
		filepath.Join(root, "big.md"):           strings.Repeat("x", 2048),
		filepath.Join(outside, "d", "inner.md"): "inner\n",
	}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "link.md")))
	must(os.Symlink(filepath.Join(outside, "d"), filepath.Join(root, "linkdir")))
	must(os.Symlink("a.md", filepath.Join(root, "inside-link.md")))
	must(os.Symlink("loop2", filepath.Join(root, "loop1")))
	must(os.Symlink("loop1", filepath.Join(root, "loop2")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	return root, outside
}

// doorCases are the door's rules on the tree setup makes: what each path
// reads as, or the error that refuses it. TestWatchedDoor runs them too.
var doorCases = []struct {
	rel  string
	want string
	err  error
}{
	{"a.md", "hello\n", nil},
	{"./sub/../a.md", "hello\n", nil},
	{"sub/b.md", "b\n", nil},
	{"..notes.md", "dotdot child\n", nil},
	{"inside-link.md", "hello\n", nil},
	{"crlf.md", "one\ntwo\n", nil},
	{"bad.md", "ok \uFFFD end", nil},
	{"link.md", "", workspace.ErrOutside},
	{"linkdir/inner.md", "", workspace.ErrOutside},
	{"../outside/secret.md", "", workspace.ErrOutside},
	{"sub/../../outside/secret.md", "", workspace.ErrOutside},
	{"/etc/passwd", "", workspace.ErrOutside},
	{"loop1", "", workspace.ErrLoop},
	{"fifo", "", workspace.ErrNotRegular},
	{"sub", "", workspace.ErrNotRegular},
	{"bin.md", "", workspace.ErrBinary},
	{"big.md", "", workspace.ErrTooLarge},
	{"missing.md", "", fs.ErrNotExist},
}

func TestDoor(t *testing.T) {
	root, _ := setup(t)
	ws, err := workspace.Open(root, workspace.WithMaxFileSize(1024))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range doorCases {
		t.Run(c.rel, func(t *testing.T) {
			f, err := ws.Load(c.rel)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Text != c.want {
				t.Errorf("got %q, want %q", f.Text, c.want)
			}
		})
	}
}

func TestReadReportsRefusals(t *testing.T) {
	root, _ := setup(t)
	ws, _ := workspace.Open(root)
	var diags workspace.Diagnostics
	if _, ok := ws.Read("link.md", &diags); ok {
		t.Fatal("read a file outside the workspace")
	}
	if _, ok := ws.Read("missing.md", &diags); ok {
		t.Fatal("read a missing file")
	}
	if _, ok := ws.Read("bad.md", &diags); !ok {
		t.Fatal("a repairable file was refused")
	}
	if len(diags) != 2 || diags[0].Path != "link.md" || diags[0].Code != "read.outside" || diags[1].Code != "read.repaired" {
		t.Errorf("diagnostics %v", diags)
	}
	if got := diags[0].String(); !strings.HasPrefix(got, "link.md: warning: resolves outside the workspace") {
		t.Errorf("String() = %q", got)
	}
}

func TestLoadCachesByIdentity(t *testing.T) {
	root, _ := setup(t)
	ws, _ := workspace.Open(root)
	a, _ := ws.Load("a.md")
	b, _ := ws.Load("a.md")
	if a != b {
		t.Error("an unchanged file was read again")
	}
	if err := os.WriteFile(filepath.Join(root, "a.md"), []byte("changed, and longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := ws.Load("a.md")
	if c == a || c.Text != "changed, and longer\n" {
		t.Errorf("a changed file was not read again: %q", c.Text)
	}
}

func TestReadDirIsConfined(t *testing.T) {
	root, _ := setup(t)
	ws, _ := workspace.Open(root)
	if _, err := ws.ReadDir("linkdir"); !errors.Is(err, workspace.ErrOutside) {
		t.Errorf("err = %v", err)
	}
	if ws.IsDir("linkdir") || !ws.IsDir("sub") {
		t.Error("IsDir followed a link out of the workspace")
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := workspace.Open(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("err = %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := workspace.Open(f); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("err = %v", err)
	}
}

func TestOpenFS(t *testing.T) {
	ws := workspace.OpenFS(fstest.MapFS{
		"AGENTS.md": {Data: []byte("\xEF\xBB\xBFhi\r\n")},
		"bin":       {Data: []byte("a\x00")},
	})
	f, err := ws.Load("AGENTS.md")
	if err != nil || f.Text != "hi\n" {
		t.Fatalf("%v %+v", err, f)
	}
	if _, err := ws.Load("bin"); !errors.Is(err, workspace.ErrBinary) {
		t.Errorf("err = %v", err)
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		dir, target string
		want        bool
	}{
		{"/p", "/p", true},
		{"/p", "/p/x", true},
		{"/p", "/p/..hidden/x.md", true},
		{"/p", "/pother/x", false},
		{"/p", "/etc/passwd", false},
		{"/p", "/", false},
	} {
		if got := workspace.Within(c.dir, c.target); got != c.want {
			t.Errorf("Within(%q, %q) = %v", c.dir, c.target, got)
		}
	}
}
