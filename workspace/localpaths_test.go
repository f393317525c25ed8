package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/workspace"
)

// LocalPaths answers as LocalPath does for each path in turn: the first
// error in the order given, or the first path.
func TestLocalPathsAgreesWithLocalPath(t *testing.T) {
	suffixes := []string{"", "-wal", "-shm", "-journal"}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root, outside string)
		rel   string
	}{
		{"nothing there", func(t *testing.T, root, outside string) {}, ".loom/memory.db"},
		{"all there", func(t *testing.T, root, outside string) {
			mk(t, filepath.Join(root, ".loom"))
			for _, s := range suffixes {
				put(t, filepath.Join(root, ".loom", "memory.db"+s))
			}
		}, ".loom/memory.db"},
		{"folder is a symlink", func(t *testing.T, root, outside string) {
			sym(t, outside, filepath.Join(root, ".loom"))
		}, ".loom/memory.db"},
		{"wal is a symlink", func(t *testing.T, root, outside string) {
			mk(t, filepath.Join(root, ".loom"))
			put(t, filepath.Join(root, ".loom", "memory.db"))
			sym(t, filepath.Join(outside, "x"), filepath.Join(root, ".loom", "memory.db-wal"))
		}, ".loom/memory.db"},
		{"journal is a symlink after a good shm", func(t *testing.T, root, outside string) {
			mk(t, filepath.Join(root, ".loom"))
			put(t, filepath.Join(root, ".loom", "memory.db-shm"))
			sym(t, filepath.Join(outside, "x"), filepath.Join(root, ".loom", "memory.db-journal"))
		}, ".loom/memory.db"},
		{"a file where a folder goes", func(t *testing.T, root, outside string) {
			put(t, filepath.Join(root, ".loom"))
		}, ".loom/memory.db"},
		{"deeper", func(t *testing.T, root, outside string) {
			mk(t, filepath.Join(root, "a", "b"))
			sym(t, outside, filepath.Join(root, "a", "b", "c"))
		}, "a/b/c/m.db"},
		{"at the root", func(t *testing.T, root, outside string) {
			sym(t, filepath.Join(outside, "x"), filepath.Join(root, "m.db-shm"))
		}, "m.db"},
		{"outside", func(t *testing.T, root, outside string) {}, "../m.db"},
		{"trailing dot", func(t *testing.T, root, outside string) {}, "a/."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root, outside := filepath.Join(base, "ws"), filepath.Join(base, "out")
			mk(t, root)
			mk(t, outside)
			tc.setup(t, root, outside)
			var want string
			var wantErr error
			for i, s := range suffixes {
				p, err := workspace.LocalPath(root, tc.rel+s)
				if err != nil {
					wantErr = err
					break
				}
				if i == 0 {
					want = p
				}
			}
			got, err := workspace.LocalPaths(root, tc.rel, suffixes...)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) || (err == nil && got != want) {
				t.Fatalf("LocalPaths: %q, %v; LocalPath one by one: %q, %v", got, err, want, wantErr)
			}
			// LocalIDs refuses what LocalPaths refuses, and gives each
			// file's identity, with and without a watch.
			for _, watch := range []bool{false, true} {
				ws, err := workspace.Open(root)
				if err != nil {
					t.Fatal(err)
				}
				if watch {
					if err := ws.Watch(); err != nil {
						t.Fatal(err)
					}
				}
				for range 2 { // the second from memory, when watched
					ids, err := ws.LocalIDs(tc.rel, suffixes...)
					if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
						t.Fatalf("watch=%v: LocalIDs: %v; LocalPaths: %v", watch, err, wantErr)
					}
					if err != nil {
						continue
					}
					for i, s := range suffixes {
						var want workspace.FileID
						if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(tc.rel+s))); err == nil {
							want = workspace.IDOf(fi)
						}
						if ids[i] != want {
							t.Fatalf("watch=%v: LocalIDs[%q] = %+v, want %+v", watch, s, ids[i], want)
						}
					}
				}
				ws.Close()
			}
		})
	}
}

func mk(t *testing.T, p string) {
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, p string) {
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func sym(t *testing.T, target, p string) {
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// While watching, LocalIDs answers again from memory, with no call to the
// file system, and sees a change once its event arrived: a file that came,
// and a folder on the way swapped for a symlink.
func TestLocalIDsWatched(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "out")
	mk(t, filepath.Join(root, ".loom"))
	mk(t, outside)
	put(t, filepath.Join(root, ".loom", "memory.db"))
	ws := watched(t, root)
	ids := func() []workspace.FileID {
		t.Helper()
		ids, err := ws.LocalIDs(".loom/memory.db", "", "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	first := ids()
	if first[0] == (workspace.FileID{}) || first[1] != (workspace.FileID{}) {
		t.Fatalf("ids = %+v, want the database's and none for the log", first)
	}
	ops := workspace.DiskOps()
	if again := ids(); again[0] != first[0] || workspace.DiskOps() != ops {
		t.Fatalf("a second answer with nothing changed made %d calls to the file system", workspace.DiskOps()-ops)
	}
	put(t, filepath.Join(root, ".loom", "memory.db-wal"))
	eventually(t, "the new log is seen", func() bool { return ids()[1] != (workspace.FileID{}) })

	if err := os.Rename(filepath.Join(root, ".loom"), filepath.Join(outside, "moved")); err != nil {
		t.Fatal(err)
	}
	sym(t, filepath.Join(outside, "moved"), filepath.Join(root, ".loom"))
	eventually(t, "the symlinked folder is refused", func() bool {
		_, err := ws.LocalIDs(".loom/memory.db", "", "-wal")
		return errors.Is(err, workspace.ErrSymlink)
	})
}
