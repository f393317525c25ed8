package workspace_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomctx/loom/workspace"
)

// openMaybeWatched opens dir, watched or not.
func openMaybeWatched(t *testing.T, dir string, watch bool) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if watch {
		if err := ws.Watch(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
	}
	return ws
}

// waitGen waits for a watched workspace to see a change.
func waitGen(t *testing.T, ws *workspace.Workspace, gen uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ws.Watching() && ws.Generation() == gen; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher never saw the change")
		}
	}
}

// An edit that keeps a file's size, inode and modification time (two
// writes within one tick of the file system's clock, made here by setting
// the time back) is still seen: a file read within racyWindow of its
// modification time is read again, not trusted to its stat. With and
// without a watch.
func TestSameStatEditIsSeen(t *testing.T) {
	for _, watch := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "a.md")
		if err := os.WriteFile(p, []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		ws := openMaybeWatched(t, dir, watch)
		f, err := ws.Load("a.md")
		if err != nil || f.Text != "one\n" {
			t.Fatalf("watch=%v: %v %q", watch, err, f.Text)
		}
		gen := ws.Generation()
		if err := os.WriteFile(p, []byte("two\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
		waitGen(t, ws, gen)
		f, err = ws.Load("a.md")
		if err != nil || f.Text != "two\n" {
			t.Fatalf("watch=%v: an edit with the same stat was missed: %v %q", watch, err, f.Text)
		}
	}
}

// Likewise a folder's listing: an entry added within one tick of the
// folder's last change is seen although the folder's stat is unchanged.
func TestSameStatFolderChangeIsSeen(t *testing.T) {
	for _, watch := range []bool{false, true} {
		dir := t.TempDir()
		d := filepath.Join(dir, "d")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "a"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		ws := openMaybeWatched(t, dir, watch)
		if list, err := ws.ReadDir("d"); err != nil || len(list) != 1 {
			t.Fatalf("watch=%v: %v %v", watch, err, list)
		}
		gen := ws.Generation()
		if err := os.WriteFile(filepath.Join(d, "b"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
		waitGen(t, ws, gen)
		list, err := ws.ReadDir("d")
		if err != nil || len(list) != 2 {
			t.Fatalf("watch=%v: an entry added with the folder's stat unchanged was missed: %v %v", watch, err, list)
		}
	}
}

// Without a watch, a file and a folder whose modification times are well
// before they were read are validated by one stat each: no open, no read,
// the same *File and the same listing. A change to either is seen.
func TestOldFilesAreValidatedByStat(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, "a.md")
	if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, q := range []string{p, d} {
		if err := os.Chtimes(q, old, old); err != nil {
			t.Fatal(err)
		}
	}
	ws := openMaybeWatched(t, dir, false)
	f1, err := ws.Load("d/a.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.ReadDir("d"); err != nil {
		t.Fatal(err)
	}
	ops := workspace.DiskOps()
	f2, err := ws.Load("d/a.md")
	if err != nil || f2 != f1 {
		t.Fatalf("an unchanged old file was not the same *File: %v", err)
	}
	list, err := ws.ReadDir("d")
	if err != nil || len(list) != 1 {
		t.Fatalf("listing: %v %v", err, list)
	}
	if n := workspace.DiskOps() - ops; n != 2 {
		t.Fatalf("validating an old file and an old folder took %d disk operations, want 2 stats", n)
	}
	// A change is seen: the file's stat moves, and so does the folder's.
	if err := os.WriteFile(p, []byte("new, longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "b.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if f3, err := ws.Load("d/a.md"); err != nil || f3.Text != "new, longer\n" {
		t.Fatalf("edit missed: %v", err)
	}
	if list, err := ws.ReadDir("d"); err != nil || len(list) != 2 {
		t.Fatalf("new entry missed: %v %v", err, list)
	}
}

// Without a watch, a folder moved out of the workspace and linked back in
// keeps its identity and modification time, but not its status change
// time: it is listed again, and refused as outside.
func TestFolderMovedOutAndLinkedBackIsRefused(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	d := filepath.Join(dir, "d")
	for _, p := range []string{d, outside} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(d, old, old); err != nil {
		t.Fatal(err)
	}
	ws := openMaybeWatched(t, dir, false)
	if list, err := ws.ReadDir("d"); err != nil || len(list) != 1 {
		t.Fatalf("%v %v", err, list)
	}
	time.Sleep(20 * time.Millisecond) // a later tick of the file system's clock
	if err := os.Rename(d, filepath.Join(outside, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(outside, "d"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "d"), d); err != nil {
		t.Fatal(err)
	}
	if list, err := ws.ReadDir("d"); err == nil {
		t.Fatalf("a folder moved outside and linked back was listed: %v", list)
	}
}
