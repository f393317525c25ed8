package workspace_test

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/loomctx/loom/workspace"
)

// IsDir and Exists say nothing about what lies outside the workspace: not
// through a symlink that escapes the root, at the end of the path or on
// the way, and not through a dangling one. A symlink to a place inside is
// followed, as reads follow it.
func TestIsDirExistsConfined(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "in"), filepath.Join(outside, "dir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "file.md"), []byte("secret\n"), 0o644)
	os.WriteFile(filepath.Join(root, "in", "x.md"), []byte("x\n"), 0o644)
	for link, target := range map[string]string{
		"out":      outside,                           // a folder outside
		"outdir":   filepath.Join(outside, "dir"),     // another
		"outfile":  filepath.Join(outside, "file.md"), // a file outside
		"up":       "..",                              // the parent, relative
		"dangling": filepath.Join(root, "nope"),
		"inlink":   "in",      // inside: followed
		"inx":      "in/x.md", // inside: followed
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel           string
		exists, isDir bool
	}{
		{"", true, true},
		{"in", true, true},
		{"in/x.md", true, false},
		{"inlink", true, true},
		{"inlink/x.md", true, false},
		{"inx", true, false},
		{"out", false, false},
		{"out/dir", false, false},
		{"out/file.md", false, false},
		{"outdir", false, false},
		{"outfile", false, false},
		{"up", false, false},
		{"up/outside/dir", false, false},
		{"../outside/dir", false, false},
		{outside, false, false},
		{"dangling", false, false},
		{"missing", false, false},
		{"in/x.md/deeper", false, false},
	} {
		if got := ws.Exists(c.rel); got != c.exists {
			t.Errorf("Exists(%q) = %v, want %v", c.rel, got, c.exists)
		}
		if got := ws.IsDir(c.rel); got != c.isDir {
			t.Errorf("IsDir(%q) = %v, want %v", c.rel, got, c.isDir)
		}
	}
}

// The same under a race: d is swapped, atomically, between a real folder
// (where "sub" is a file and "only-outside" is missing) and a symlink to
// an outside folder (where "sub" is a folder and "only-outside" exists).
// A look-up that checked the path and then stat'ed it would now and then
// see the outside folder; the door's answer comes from a descriptor, so it
// never does.
func TestIsDirExistsUnderSwap(t *testing.T) {
	t.Run("openat2", testLookUpSwap)
	t.Run("walk", func(t *testing.T) {
		defer workspace.WithoutOpenat2()()
		testLookUpSwap(t)
	})
}

func testLookUpSwap(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "d"), filepath.Join(outside, "sub"), filepath.Join(outside, "only-outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "d", "sub"), []byte("a file inside\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	d, link := filepath.Join(root, "d"), filepath.Join(root, "link")
	if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2 RENAME_EXCHANGE: %v", err)
	}
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	var looks, inside int
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		looks++
		if ws.IsDir("d/sub") {
			t.Error("IsDir(d/sub) saw the folder outside")
			break
		}
		if ws.Exists("d/only-outside") {
			t.Error("Exists(d/only-outside) saw a name outside")
			break
		}
		if ws.Exists("d/sub") {
			inside++
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d look-ups, %d swaps, %d saw the inside file", looks, swaps.Load(), inside)
	if swaps.Load() == 0 || inside == 0 {
		t.Error("the race did not run both ways")
	}
}
