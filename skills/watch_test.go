package skills

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// next waits for the watcher's next change, failing after a generous
// timeout rather than sleeping for a fixed time.
func next(t *testing.T, w *Watcher) Change {
	t.Helper()
	select {
	case c, ok := <-w.Changes():
		if !ok {
			t.Fatal("changes channel closed")
		}
		if c.Err != nil {
			t.Fatal(c.Err)
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change within 10s")
	}
	return Change{}
}

// waitFor reads changes until cond holds for the set.
func waitFor(t *testing.T, w *Watcher, what string, cond func(*Set) bool) *Set {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-w.Changes():
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			if c.Set != nil && cond(c.Set) {
				return c.Set
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func names(s *Set) []string {
	var out []string
	for _, sk := range s.Usable() {
		out = append(out, sk.Name)
	}
	return out
}

func TestWatcherPicksUpNewFoldersAndEdits(t *testing.T) {
	dir := t.TempDir() // no skills/ folder yet
	l := New(openWS(t, dir), noBuiltins(env(nil, nil, "linux")))
	w, err := Watch(l, WatchOptions{Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// The skills folder and a skill in it, created after the start.
	writeFiles(t, dir, map[string]string{"skills/a/SKILL.md": skillMD("a", "first")})
	waitFor(t, w, "skill a", func(s *Set) bool { return slices.Equal(names(s), []string{"a"}) })

	// An edit inside an existing skill folder.
	writeFiles(t, dir, map[string]string{"skills/a/SKILL.md": skillMD("a", "second")})
	waitFor(t, w, "edited a", func(s *Set) bool { sk, ok := s.Get("a"); return ok && sk.Description() == "second" })

	// A new skill subfolder whose SKILL.md arrives a moment later.
	if err := os.Mkdir(filepath.Join(dir, "skills/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	next(t, w)
	writeFiles(t, dir, map[string]string{"skills/b/SKILL.md": skillMD("b", "new")})
	waitFor(t, w, "skill b", func(s *Set) bool { return slices.Equal(names(s), []string{"a", "b"}) })

	// The flat folder, created from nothing.
	writeFiles(t, dir, map[string]string{"agent/skills/c.md": skillMD("c", "flat")})
	waitFor(t, w, "skill c", func(s *Set) bool { return slices.Equal(names(s), []string{"a", "b", "c"}) })

	// Removal.
	if err := os.RemoveAll(filepath.Join(dir, "skills/a")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, "a removed", func(s *Set) bool { return slices.Equal(names(s), []string{"b", "c"}) })
}

func TestWatcherDebouncesBursts(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"skills/a/SKILL.md": skillMD("a", "v0")})
	l := New(openWS(t, dir), noBuiltins(env(nil, nil, "linux")))
	w, err := Watch(l, WatchOptions{Debounce: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 5 {
		writeFiles(t, dir, map[string]string{"skills/a/SKILL.md": skillMD("a", "v"+itoa(i+1))})
	}
	c := next(t, w)
	if sk, _ := c.Set.Get("a"); sk.Description() != "v05" {
		t.Errorf("first change after a burst saw %q, want the last write", sk.Description())
	}
	select {
	case c := <-w.Changes():
		t.Errorf("a burst gave a second change: %v", c.Paths)
	case <-time.After(600 * time.Millisecond):
	}
}

func TestWatchersArePerWorkspace(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	opts := noBuiltins(env(nil, nil, "linux"))
	w1, err := Watch(New(openWS(t, d1), opts), WatchOptions{Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	w2, err := Watch(New(openWS(t, d2), opts), WatchOptions{Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	writeFiles(t, d1, map[string]string{"skills/one/SKILL.md": skillMD("one", "d")})
	waitFor(t, w1, "one in workspace 1", func(s *Set) bool { return slices.Equal(names(s), []string{"one"}) })
	select {
	case c := <-w2.Changes():
		t.Errorf("workspace 2 saw a change: %v", c.Paths)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestWatcherIgnoresUnrelatedFilesUnlessAsked(t *testing.T) {
	dir := t.TempDir()
	l := New(openWS(t, dir), noBuiltins(env(nil, nil, "linux")))
	w, err := Watch(l, WatchOptions{Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"AGENTS.md": "x"})
	select {
	case c := <-w.Changes():
		t.Errorf("a root file triggered a skills reload: %v", c.Paths)
	case <-time.After(200 * time.Millisecond):
	}
	w.Close()

	w, err = Watch(l, WatchOptions{Debounce: 20 * time.Millisecond, Also: []string{"."}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFiles(t, dir, map[string]string{"AGENTS.md": "y"})
	c := next(t, w)
	real, _ := filepath.EvalSymlinks(dir)
	if !slices.Contains(c.Paths, filepath.Join(real, "AGENTS.md")) {
		t.Errorf("paths %q", c.Paths)
	}
}

func TestWatcherCloseClosesChannel(t *testing.T) {
	w, err := Watch(New(openWS(t, t.TempDir()), Options{NoBuiltins: true}), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.Changes(); ok {
		t.Error("channel still open")
	}
	w.Close() // twice is fine
}

// Under a watched workspace, a flat skills folder made from nothing (its
// parent agent/ too) is in the next load after its events arrived, not
// only once the availability check next expires (binsFresh, 2 s): the
// event on agent/ alone moves the stamp of agent/skills.
func TestWatchedLoadSeesFolderMadeFromNothing(t *testing.T) {
	dir := t.TempDir()
	ws := openWS(t, dir)
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	l := New(ws, Options{NoBuiltins: true})
	if s := l.Load(); len(s.Usable()) != 0 {
		t.Fatalf("skills before any: %v", names(s))
	}
	writeFiles(t, dir, map[string]string{"agent/skills/c.md": skillMD("c", "flat")})
	deadline := time.Now().Add(binsFresh / 2)
	for s := l.Load(); !slices.Equal(names(s), []string{"c"}); s = l.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: skills %v; the new folder is not seen", binsFresh/2, names(s))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
