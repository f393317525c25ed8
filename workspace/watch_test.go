package workspace_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/workspace"
)

func watched(t *testing.T, root string, opts ...workspace.Option) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Open(root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ws.Close(); err != nil {
			t.Error(err)
		}
	})
	return ws
}

// eventually polls cond until it holds or 5 s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func text(ws *workspace.Workspace, rel string) string {
	f, err := ws.Load(rel)
	if err != nil {
		return "error: " + err.Error()
	}
	return f.Text
}

func names(ws *workspace.Workspace, rel string) []string {
	list, err := ws.ReadDir(rel)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, e := range list {
		out = append(out, e.Name())
	}
	return out
}

// noDisk fails if reads touch the file system.
func noDisk(t *testing.T, what string, reads func()) {
	t.Helper()
	before := workspace.DiskOps()
	reads()
	if n := workspace.DiskOps() - before; n != 0 {
		t.Errorf("%s: %d file-system calls, want 0", what, n)
	}
}

func TestWatchedWarmReadsTouchNoDisk(t *testing.T) {
	root := t.TempDir()
	var rels []string
	for i := range 20 {
		rel := fmt.Sprintf("d%d/sub/f%d.md", i%4, i)
		write(t, filepath.Join(root, filepath.FromSlash(rel)), rel)
		rels = append(rels, rel)
	}
	os.Symlink("d0/sub", filepath.Join(root, "alias"))
	ws := watched(t, root)
	reads := func() {
		for _, rel := range rels {
			if got := text(ws, rel); got != rel {
				t.Fatalf("%s: %q", rel, got)
			}
		}
		ws.Load("missing.md")
		ws.Load("d1/missing/deeper.md")
		ws.Load("alias/f0.md")
		ws.ReadDir("")
		ws.ReadDir("d2/sub")
		ws.IsDir("d3")
		ws.Exists("nope")
	}
	reads() // warm up
	gen := ws.Generation()
	noDisk(t, "warm reads", func() {
		for range 5 {
			reads()
		}
	})
	if ws.Generation() != gen {
		t.Error("warm reads bumped Generation")
	}
	if got := text(ws, "alias/f0.md"); got != "d0/sub/f0.md" {
		t.Errorf("alias: %q", got)
	}
}

func TestWatchedSeesChanges(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a.md"), "one\n")
	write(t, filepath.Join(root, "sub", "b.md"), "b\n")
	ws := watched(t, root)
	if text(ws, "a.md") != "one\n" || !slices.Equal(names(ws, "sub"), []string{"b.md"}) {
		t.Fatal("first reads")
	}

	gen := ws.Generation()
	write(t, filepath.Join(root, "a.md"), "two\n") // same size: the event, not the stat, must tell
	eventually(t, "the write is seen", func() bool { return text(ws, "a.md") == "two\n" })
	if ws.Generation() <= gen {
		t.Error("a write did not bump Generation")
	}

	write(t, filepath.Join(root, "sub", "c.md"), "c\n")
	eventually(t, "ReadDir sees the new file", func() bool {
		return slices.Equal(names(ws, "sub"), []string{"b.md", "c.md"})
	})

	os.Remove(filepath.Join(root, "a.md"))
	eventually(t, "the deletion is seen", func() bool {
		_, err := ws.Load("a.md")
		return errors.Is(err, fs.ErrNotExist)
	})

	if ws.IsDir("later") {
		t.Fatal("IsDir of a missing folder")
	}
	os.Mkdir(filepath.Join(root, "later"), 0o755)
	eventually(t, "IsDir flips", func() bool { return ws.IsDir("later") })
	if err := ws.WatchErr(); err != nil {
		t.Error(err)
	}
}

func TestWatchedFolderRenamedAndRecreated(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "sub", "deep", "b.md"), "b\n")
	ws := watched(t, root)
	if text(ws, "sub/deep/b.md") != "b\n" {
		t.Fatal("first read")
	}
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "old")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rename is seen", func() bool {
		_, err := ws.Load("sub/deep/b.md")
		return errors.Is(err, fs.ErrNotExist)
	})
	write(t, filepath.Join(root, "sub", "deep", "b.md"), "new b\n")
	eventually(t, "the new folder is seen", func() bool { return text(ws, "sub/deep/b.md") == "new b\n" })
	// The moved folder's old watch must not stand in for the new one.
	write(t, filepath.Join(root, "sub", "deep", "b.md"), "newer\n")
	eventually(t, "a write in the new folder is seen", func() bool { return text(ws, "sub/deep/b.md") == "newer\n" })
	write(t, filepath.Join(root, "old", "deep", "b.md"), "moved away\n")
	if got := text(ws, "sub/deep/b.md"); got != "newer\n" {
		t.Errorf("got %q", got)
	}
}

func TestWatchedSymlinks(t *testing.T) {
	root, outside := setup(t)
	write(t, filepath.Join(root, "real", "r.md"), "r\n")
	os.Symlink("real", filepath.Join(root, "dirlink"))
	ws := watched(t, root)
	if text(ws, "dirlink/r.md") != "r\n" || text(ws, "inside-link.md") != "hello\n" {
		t.Fatal("first reads")
	}
	// A write in the link's real folder is seen through the link.
	write(t, filepath.Join(root, "real", "r.md"), "r2\n")
	eventually(t, "a write behind a folder link", func() bool { return text(ws, "dirlink/r.md") == "r2\n" })

	// Retargeting a link inside the workspace is seen.
	retarget := func(target string) {
		tmp := filepath.Join(root, "inside-link.tmp")
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(root, "inside-link.md")); err != nil {
			t.Fatal(err)
		}
	}
	retarget("sub/b.md")
	eventually(t, "the retargeted link", func() bool { return text(ws, "inside-link.md") == "b\n" })

	// Retargeting it outside is refused, cache or not.
	retarget(filepath.Join(outside, "secret.md"))
	eventually(t, "the link now leads outside", func() bool {
		_, err := ws.Load("inside-link.md")
		return errors.Is(err, workspace.ErrOutside)
	})
	for range 3 {
		if _, err := ws.Load("inside-link.md"); !errors.Is(err, workspace.ErrOutside) {
			t.Fatalf("err = %v", err)
		}
	}
}

// TestWatchedDoor runs the door's rules twice on a watched workspace: the
// second, cached answers must be the first ones.
func TestWatchedDoor(t *testing.T) {
	root, _ := setup(t)
	ws := watched(t, root, workspace.WithMaxFileSize(1024))
	for round := range 2 {
		for _, c := range doorCases {
			f, err := ws.Load(c.rel)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Errorf("round %d: %s: err = %v, want %v", round, c.rel, err, c.err)
				}
				continue
			}
			if err != nil || f.Text != c.want {
				t.Errorf("round %d: %s: %v %+v", round, c.rel, err, f)
			}
		}
		if _, err := ws.ReadDir("linkdir"); !errors.Is(err, workspace.ErrOutside) {
			t.Errorf("round %d: ReadDir(linkdir): %v", round, err)
		}
		if ws.IsDir("linkdir") || !ws.IsDir("sub") || ws.Exists("loop1") {
			t.Errorf("round %d: IsDir/Exists", round)
		}
	}
}

func TestWatchFailureFallsBackToDisk(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "sub", "b.md"), "b\n")
	write(t, filepath.Join(root, "a.md"), "a\n")
	restore := workspace.FailWatches(func(dir string) bool { return filepath.Base(dir) == "sub" })
	defer restore()
	ws := watched(t, root)
	text(ws, "sub/b.md")
	text(ws, "a.md")

	// sub could not be watched: every read of it checks the disk, and so a
	// change is seen at once.
	write(t, filepath.Join(root, "sub", "b.md"), "b, changed\n")
	before := workspace.DiskOps()
	if got := text(ws, "sub/b.md"); got != "b, changed\n" {
		t.Errorf("got %q", got)
	}
	if workspace.DiskOps() == before {
		t.Error("an unwatched folder was trusted")
	}
	noDisk(t, "watched a.md", func() { text(ws, "a.md") })

	// A watcher error ends all trust.
	gen := ws.Generation()
	ws.InjectWatchErr(errors.New("queue overflow"))
	if err := ws.WatchErr(); err == nil || !strings.Contains(err.Error(), "queue overflow") {
		t.Errorf("WatchErr = %v", err)
	}
	if ws.Generation() == gen {
		t.Error("a watcher error did not bump Generation")
	}
	before = workspace.DiskOps()
	write(t, filepath.Join(root, "a.md"), "A\n")
	if got := text(ws, "a.md"); got != "A\n" {
		t.Errorf("got %q", got)
	}
	if workspace.DiskOps() == before {
		t.Error("the cache was trusted after a watcher error")
	}
}

func TestCloseGoesBackToStat(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a.md"), "a\n")
	ws, _ := workspace.Open(root)
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	text(ws, "a.md")
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "a.md"), "A, longer\n")
	if got := text(ws, "a.md"); got != "A, longer\n" {
		t.Errorf("after Close: %q", got)
	}
	if err := ws.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// Watching again works.
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	text(ws, "a.md")
	noDisk(t, "after a second Watch", func() { text(ws, "a.md") })
}

// TestWatchedConcurrent is for -race: readers and a writer at once, and the
// last write is seen.
func TestWatchedConcurrent(t *testing.T) {
	root := t.TempDir()
	for i := range 10 {
		write(t, filepath.Join(root, fmt.Sprintf("f%d.md", i)), "v0\n")
	}
	ws := watched(t, root)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 10 {
					if f, err := ws.Load(fmt.Sprintf("f%d.md", i)); err == nil && !strings.HasPrefix(f.Text, "v") {
						t.Errorf("reader %d: %q", r, f.Text)
					}
				}
				ws.ReadDir("")
				ws.Generation()
			}
		})
	}
	for v := 1; v <= 50; v++ {
		i := v % 10
		p := filepath.Join(root, fmt.Sprintf("f%d.md", i))
		tmp := p + ".tmp"
		write(t, tmp, fmt.Sprintf("v%d\n", v))
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	for v := 41; v <= 50; v++ {
		rel, want := fmt.Sprintf("f%d.md", v%10), fmt.Sprintf("v%d\n", v)
		eventually(t, rel+" shows the last write", func() bool { return text(ws, rel) == want })
	}
}

// makeFiles writes n files in folders of ten and returns their paths.
func makeFiles(b *testing.B, n int) (root string, rels []string) {
	root = b.TempDir()
	for i := range n {
		rel := fmt.Sprintf("skills/s%02d/f%03d.md", i/10, i)
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(strings.Repeat("line\n", 40)), 0o644); err != nil {
			b.Fatal(err)
		}
		rels = append(rels, rel)
	}
	return root, rels
}

func benchLoad(b *testing.B, watch bool) {
	root, rels := makeFiles(b, 300)
	ws, err := workspace.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	if watch {
		if err := ws.Watch(); err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
	}
	for _, rel := range rels {
		if _, err := ws.Load(rel); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, rel := range rels {
			if _, err := ws.Load(rel); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLoadWarm loads 300 unchanged files, each checked with a stat.
func BenchmarkLoadWarm(b *testing.B) { benchLoad(b, false) }

// BenchmarkLoadWatched loads the same 300 files trusted by the watcher.
func BenchmarkLoadWatched(b *testing.B) { benchLoad(b, true) }

// TestWatchedEventsArePrecise: events for other names, or for contents,
// leave an answer trusted.
func TestWatchedEventsArePrecise(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "sub", "b.md"), "b\n")
	write(t, filepath.Join(root, "other.md"), "o\n")
	ws := watched(t, root)
	text(ws, "sub/b.md")
	ws.ReadDir("sub")
	// settled waits until every event so far has been handled: events come
	// in order, and the cached "no" for a new name only turns once its
	// creation event is in.
	n := 0
	settled := func() {
		n++
		flag := fmt.Sprintf("flag%d", n)
		if ws.Exists(flag) {
			t.Fatal(flag)
		}
		write(t, filepath.Join(root, flag), "")
		eventually(t, flag+" is seen", func() bool { return ws.Exists(flag) })
	}

	gen := ws.Generation()
	write(t, filepath.Join(root, "other.md"), "o2\n")
	write(t, filepath.Join(root, "new.md"), "n\n")
	settled()
	if ws.Generation() == gen {
		t.Error("events did not bump Generation")
	}
	noDisk(t, "sub/b.md after events for other names", func() { text(ws, "sub/b.md") })

	write(t, filepath.Join(root, "sub", "b.md"), "b2\n")
	settled()
	if got := text(ws, "sub/b.md"); got != "b2\n" {
		t.Errorf("got %q", got)
	}
	noDisk(t, "listing after a content write", func() { ws.ReadDir("sub") })
}

func TestWatchedRootRemoved(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	write(t, filepath.Join(root, "a.md"), "a\n")
	ws := watched(t, root)
	if !ws.IsDir("") || !ws.Exists("") || text(ws, "a.md") != "a\n" {
		t.Fatal("first reads")
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the root is gone", func() bool { return !ws.IsDir("") && !ws.Exists("") })
	if _, err := ws.Load("a.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v", err)
	}
}

// After an edit of a file alone, a watched Load reads the file again
// without walking its folders (each folder's lookup is one more call to the
// file system); a file swapped for a symlink to outside, or a folder on
// the way swapped for one, is still refused, found the long way.
func TestWatchedEditReadsOnlyTheFile(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "out")
	rel := "a/b/c/f.md"
	p := filepath.Join(root, filepath.FromSlash(rel))
	write(t, p, "one\n")
	write(t, filepath.Join(outside, "secret.md"), "secret\n")
	ws := watched(t, root)
	if got := text(ws, rel); got != "one\n" {
		t.Fatal(got)
	}
	// Each edit is one append, one event: the Load measured is the first
	// after it, and sees the whole edit.
	want := "one\n"
	edit := func(more string) int64 {
		t.Helper()
		gen := ws.Generation()
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(more); err != nil {
			t.Fatal(err)
		}
		f.Close()
		want += more
		waitGen(t, ws, gen)
		ops := workspace.DiskOps()
		if got := text(ws, rel); got != want {
			t.Fatalf("after the edit: %q, want %q", got, want)
		}
		return workspace.DiskOps() - ops
	}
	for _, more := range []string{"two\n", "three\n"} {
		if n := edit(more); n > 2 {
			t.Errorf("a read after an edit of the file alone made %d calls to the file system; a walk of %s makes 4 more", n, rel)
		}
	}

	gen := ws.Generation()
	os.Remove(p)
	if err := os.Symlink(filepath.Join(outside, "secret.md"), p); err != nil {
		t.Fatal(err)
	}
	waitGen(t, ws, gen)
	eventually(t, "the file swapped for a symlink to outside is refused", func() bool {
		_, err := ws.Load(rel)
		return errors.Is(err, workspace.ErrOutside) || errors.Is(err, workspace.ErrSymlink)
	})

	os.Remove(p)
	write(t, p, "four\n")
	eventually(t, "the file is back", func() bool { return text(ws, rel) == "four\n" })
	if err := os.Rename(filepath.Join(root, "a", "b"), filepath.Join(outside, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "b"), filepath.Join(root, "a", "b")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(outside, "b", "c", "f.md"), "five\n")
	eventually(t, "a folder swapped for a symlink to outside is refused", func() bool {
		_, err := ws.Load(rel)
		return errors.Is(err, workspace.ErrOutside) || errors.Is(err, workspace.ErrSymlink)
	})
}
