package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/loomctx/loom/workspace"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// While a Hold lasts, the door keeps every rule it has without one.
func TestDoorUnderHold(t *testing.T) {
	root, _ := setup(t)
	ws, err := workspace.Open(root, workspace.WithMaxFileSize(1024))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Hold()()
	for _, c := range doorCases {
		f, err := ws.Load(c.rel)
		switch {
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: err = %v, want %v", c.rel, err, c.err)
		case c.err == nil && err != nil:
			t.Errorf("%s: %v", c.rel, err)
		case c.err == nil && f.Text != c.want:
			t.Errorf("%s: got %q, want %q", c.rel, f.Text, c.want)
		}
	}
	if _, err := ws.ReadDir("linkdir"); !errors.Is(err, workspace.ErrOutside) {
		t.Errorf("ReadDir(linkdir): err = %v", err)
	}
	if ws.IsDir("linkdir") || !ws.IsDir("sub") {
		t.Error("IsDir followed a link out of the workspace")
	}
}

// Holds nest and overlap; the one descriptor they share is closed when the
// last is released, and releasing twice is harmless.
func TestHoldClosesItsDescriptor(t *testing.T) {
	root, _ := setup(t)
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	r1 := ws.Hold()
	r2 := ws.Hold()
	if n := openFDs(t); n != before+1 {
		t.Fatalf("two holds: %d descriptors open, want %d", n, before+1)
	}
	for _, rel := range []string{"a.md", "sub/b.md", "missing.md", "link.md"} {
		ws.Load(rel)
	}
	ws.ReadDir("sub")
	ws.IsDir("sub")
	if n := openFDs(t); n != before+1 {
		t.Fatalf("reads under a hold left %d descriptors open, want %d", n, before+1)
	}
	r1()
	r1()
	if n := openFDs(t); n != before+1 {
		t.Fatalf("one hold left, released twice: %d descriptors open, want %d", n, before+1)
	}
	r2()
	if n := openFDs(t); n != before {
		t.Fatalf("all holds released: %d descriptors open, want %d", n, before)
	}
	// Reads go on without a hold.
	if f, err := ws.Load("sub/b.md"); err != nil || f.Text != "b\n" {
		t.Fatalf("after the holds: %v %v", f, err)
	}
}

// Readers under holds taken and released concurrently, while a folder is
// swapped for a symlink to one outside: nothing from outside is ever read,
// and no descriptor is left open. Run it with -race.
func TestHoldUnderSwap(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "sub", "f.md"), []byte("inside\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "f.md"), []byte("SECRET\n"), 0o644)
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	stop := make(chan struct{})
	var swaps, reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sub, real, link := filepath.Join(root, "sub"), filepath.Join(root, ".real"), filepath.Join(root, ".link")
		for {
			select {
			case <-stop:
				return
			default:
			}
			// sub becomes a symlink to outside, then the folder again.
			os.Remove(link)
			if os.Symlink(outside, link) != nil || os.Rename(sub, real) != nil {
				continue
			}
			os.Rename(link, sub)
			os.Remove(sub)
			os.Rename(real, sub)
			swaps.Add(1)
		}
	}()
	var leaked atomic.Bool
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; i < 400; i++ {
				release := ws.Hold()
				for range 5 {
					f, err := ws.Load("sub/f.md")
					if err == nil && strings.Contains(f.Text, "SECRET") {
						leaked.Store(true)
					}
					reads.Add(1)
				}
				release()
			}
		}()
	}
	readers.Wait()
	close(stop)
	wg.Wait()
	if leaked.Load() {
		t.Fatal("a read under a hold saw the file outside the workspace")
	}
	if n := openFDs(t); n != before {
		t.Fatalf("%d descriptors open after the holds, want %d", n, before)
	}
	t.Logf("%d reads against %d swaps", reads.Load(), swaps.Load())
}
