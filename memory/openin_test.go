package memory_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/workspace"
)

func openWS(t *testing.T) (ws *workspace.Workspace, root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return ws, ws.Root(), outside
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("created outside the workspace: %v", names)
	}
}

func TestOpenInMakesPrivateFoldersInside(t *testing.T) {
	ws, root, _ := openWS(t)
	db := filepath.Join(root, ".loom", "a", "memory.db")
	s, err := memory.OpenIn(ws, db, false)
	if s != nil || err != nil {
		t.Fatalf("create=false with no database: %v %v", s, err)
	}
	if _, err := os.Lstat(filepath.Join(root, ".loom")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("create=false made a folder: %v", err)
	}
	s, err = memory.OpenIn(ws, db, true)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, d := range []string{".loom", ".loom/a"} {
		st, err := os.Stat(filepath.Join(root, d))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, st.Mode(), err)
		}
	}
	if s, err = memory.OpenIn(ws, db, false); s == nil || err != nil {
		t.Fatalf("create=false on the existing database: %v %v", s, err)
	}
	s.Close()
}

// A symlink out of the workspace anywhere on the way to the database is
// refused, with or without create, and nothing appears outside.
func TestOpenInRefusesSymlinks(t *testing.T) {
	for _, link := range []string{".loom", ".loom/a", ".loom/a/memory.db", ".loom/a/memory.db-wal"} {
		t.Run(link, func(t *testing.T) {
			ws, root, outside := openWS(t)
			p := filepath.Join(root, filepath.FromSlash(link))
			os.MkdirAll(filepath.Dir(p), 0o700)
			target := outside
			if filepath.Ext(link) != "" {
				target = filepath.Join(outside, "x")
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(root, ".loom", "a", "memory.db")
			for _, create := range []bool{false, true} {
				if s, err := memory.OpenIn(ws, db, create); err == nil {
					if s != nil {
						s.Close()
					}
					t.Errorf("create=%v: opened through a symlink at %s", create, link)
				} else if !errors.Is(err, workspace.ErrSymlink) {
					t.Errorf("create=%v: err = %v, want ErrSymlink", create, err)
				}
			}
			assertEmpty(t, outside)
		})
	}
}

// The operator's location outside the workspace is used as given.
func TestOpenInOperatorLocation(t *testing.T) {
	ws, _, outside := openWS(t)
	db := filepath.Join(outside, "deep", "memory.db")
	s, err := memory.OpenIn(ws, db, true)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(db); err != nil {
		t.Fatal(err)
	}
}

// The race: while the store is opened in a loop, .loom keeps being
// swapped between missing (so the opener makes it) and a symlink to an
// outside folder. Made with a check and then os.MkdirAll, the folders
// would sometimes be created through the symlink, outside; made through
// the door, never.
func TestOpenInUnderSwap(t *testing.T) {
	ws, root, outside := openWS(t)
	loom := filepath.Join(root, ".loom")
	db := filepath.Join(loom, "db", "memory.db")
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
			os.RemoveAll(loom)
			if os.Symlink(outside, loom) == nil {
				swaps.Add(1)
			}
			time.Sleep(50 * time.Microsecond)
			os.Remove(loom)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	var opens, refused int
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		s, err := memory.OpenIn(ws, db, true)
		if err != nil {
			refused++
			continue
		}
		opens++
		s.Close()
	}
	close(stop)
	wg.Wait()
	t.Logf("%d opened, %d refused, %d swaps", opens, refused, swaps.Load())
	assertEmpty(t, outside)
	if swaps.Load() == 0 || opens+refused == 0 {
		t.Error("the race did not run")
	}
}
