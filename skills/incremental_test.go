package skills

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// settle loads until cond holds, since the watcher's events arrive a
// little after a change.
func settle(t *testing.T, l *Loader, what string, cond func(*Set) bool) *Set {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := l.Load()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sameAsFresh checks a watched, incremental load against what a new
// loader reads from scratch.
func sameAsFresh(t *testing.T, dir string, got *Set, opts ...Options) {
	t.Helper()
	o := Options{NoBuiltins: true}
	if len(opts) > 0 {
		o = opts[0]
	}
	want := New(openWS(t, dir), o).Load()
	if !reflect.DeepEqual(got.Skills, want.Skills) || !reflect.DeepEqual(got.Diagnostics, want.Diagnostics) {
		t.Fatalf("incremental load differs from a fresh one:\n%+v\n%+v", got.Skills, want.Skills)
	}
}

// With the workspace watched, a load after one skill changed reads and
// parses that skill alone, and hands back the very same *Skill for every
// other one; a load after nothing changed hands back the same Set. Each
// result equals a fresh load.
func TestWatchedLoadIsIncremental(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"skills/a/SKILL.md":  skillMD("a", "Alpha."),
		"skills/b/SKILL.md":  skillMD("b", "Beta."),
		"skills/c/SKILL.md":  skillMD("c", "Gamma."),
		"agent/skills/b.md":  skillMD("b", "Flat beta."),
		"agent/skills/d.md":  skillMD("d", "Delta."),
		"skills/e/notes.txt": "not a skill",
	})
	ws := openWS(t, dir)
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	l := New(ws, Options{NoBuiltins: true})
	s1 := l.Load()
	sameAsFresh(t, dir, s1)
	if s2 := l.Load(); s2 != s1 {
		t.Fatal("a load with nothing changed made a new Set")
	}
	byName := func(s *Set, name string, flat bool) *Skill {
		for _, sk := range s.Skills {
			if sk.Name == name && (sk.Source == SourceWorkspace) && (filepath.Ext(sk.Path) == ".md" && filepath.Base(sk.Path) != FileName) == flat {
				return sk
			}
		}
		t.Fatalf("no skill %s", name)
		return nil
	}

	parses := l.parses.Load()
	writeFiles(t, dir, map[string]string{"skills/a/SKILL.md": skillMD("a", "Alpha, edited.")})
	s3 := settle(t, l, "the edit", func(s *Set) bool { return byName(s, "a", false).Description() == "Alpha, edited." })
	sameAsFresh(t, dir, s3)
	if n := l.parses.Load() - parses; n != 1 {
		t.Errorf("one edit parsed %d files, want 1", n)
	}
	for _, n := range []string{"b", "c"} {
		if byName(s3, n, false) != byName(s1, n, false) {
			t.Errorf("skill %s was made again, though it did not change", n)
		}
	}
	if byName(s3, "d", true) != byName(s1, "d", true) || byName(s3, "b", true) != byName(s1, "b", true) {
		t.Error("a flat skill was made again, though its folder did not change")
	}

	// Removing the folder skill b lets the flat b win: its status changes,
	// so it is a new *Skill; the others stay.
	if err := os.RemoveAll(filepath.Join(dir, "skills", "b")); err != nil {
		t.Fatal(err)
	}
	s4 := settle(t, l, "the removal", func(s *Set) bool { sk, _ := s.Get("b"); return sk != nil && sk.Description() == "Flat beta." })
	sameAsFresh(t, dir, s4)
	if byName(s4, "c", false) != byName(s1, "c", false) {
		t.Error("skill c was made again after another folder went")
	}
	if sk, _ := s4.Get("b"); sk.Status != StatusOK || sk == byName(s1, "b", true) {
		t.Errorf("the flat b kept its old state: %+v", sk)
	}

	// A new skill appears.
	writeFiles(t, dir, map[string]string{"skills/f/SKILL.md": skillMD("f", "Phi.")})
	s5 := settle(t, l, "the new skill", func(s *Set) bool { _, ok := s.Get("f"); return ok })
	sameAsFresh(t, dir, s5)
}

// When PATH is searched afresh (a new availability epoch; with an injected
// environment, every load), a watched load keeps each skill whose needs are
// still met as the very same *Skill, re-makes one whose availability
// changed, and parses nothing again.
func TestWatchedLoadRechecksAvailability(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"skills/a/SKILL.md": skillMD("a", "Needs a token.", `metadata: {"nanobot":{"requires":{"env":["LOOM_TEST_TOKEN"]}}}`+"\n"),
		"skills/b/SKILL.md": skillMD("b", "Needs nothing."),
	})
	ws := openWS(t, dir)
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	l := New(ws, noBuiltins(env(nil, vars, "linux")))
	s1 := l.Load()
	a1, _ := s1.Get("a")
	b1, _ := s1.Get("b")
	if a1.Available || !b1.Available {
		t.Fatalf("availability: a %v, b %v", a1.Available, b1.Available)
	}
	parses := l.parses.Load()
	vars["LOOM_TEST_TOKEN"] = "set"
	s2 := l.Load()
	a2, _ := s2.Get("a")
	b2, _ := s2.Get("b")
	if !a2.Available {
		t.Error("a skill whose variable appeared is still unavailable")
	}
	if b2 != b1 {
		t.Error("a skill whose availability did not change was made again")
	}
	if n := l.parses.Load() - parses; n != 0 {
		t.Errorf("rechecking availability parsed %d files", n)
	}
	sameAsFresh(t, dir, s2, noBuiltins(env(nil, vars, "linux")))
}

// A reload after a few skill files changed patches the last Set in place
// (patchSet) instead of settling every skill again; each result equals a
// fresh load: a shadowing winner and its loser edited, a skill broken (its
// diagnostics change in number, so the Set is made whole) and mended, two
// edited at once. Watched and not.
func TestPatchedSetEqualsFresh(t *testing.T) {
	for _, watch := range []bool{true, false} {
		dir := t.TempDir()
		files := map[string]string{
			"skills/b/SKILL.md": skillMD("b", "Beta."),
			"agent/skills/b.md": skillMD("b", "Flat beta."),
			"agent/skills/z.md": skillMD("z", "Zed."),
		}
		for _, n := range []string{"a", "c", "d", "e", "f", "g"} {
			files["skills/"+n+"/SKILL.md"] = skillMD(n, "Skill "+n+".")
		}
		writeFiles(t, dir, files)
		ws := openWS(t, dir)
		if watch {
			if err := ws.Watch(); err != nil {
				t.Fatal(err)
			}
		}
		l := New(ws, Options{NoBuiltins: true})
		sameAsFresh(t, dir, l.Load())
		for _, step := range []struct {
			files map[string]string
			shows string // a description the new Set has
		}{
			{map[string]string{"skills/b/SKILL.md": skillMD("b", "Beta, the winner, edited.")}, "Beta, the winner, edited."},
			{map[string]string{"agent/skills/b.md": skillMD("b", "Flat beta, the loser, edited.")}, "Flat beta, the loser, edited."},
			{map[string]string{"skills/d/SKILL.md": skillMD("d", "Delta edited.")}, "Delta edited."},
			{map[string]string{"skills/e/SKILL.md": "---\nname: e\ndescription: [unclosed\n---\nBody.\n"}, ""},
			{map[string]string{"skills/e/SKILL.md": skillMD("e", "Mended.")}, "Mended."},
			{map[string]string{"skills/a/SKILL.md": skillMD("a", "Two at once, a."), "skills/g/SKILL.md": skillMD("g", "Two at once, g.")}, "Two at once, g."},
			// One warning for another: the same number of diagnostics,
			// different ones.
			{map[string]string{"skills/f/SKILL.md": skillMD("ff", "Misnamed once.")}, "Misnamed once."},
			{map[string]string{"skills/f/SKILL.md": skillMD("fff", "Misnamed twice.")}, "Misnamed twice."},
			// A new skill folder: the listing changed, so the folder is
			// listed again; then edits of it and of the others patch again.
			{map[string]string{"skills/h/SKILL.md": skillMD("h", "Added.")}, "Added."},
			{map[string]string{"skills/h/SKILL.md": skillMD("h", "Added, edited.")}, "Added, edited."},
			{map[string]string{"skills/c/SKILL.md": skillMD("c", "Gamma edited.")}, "Gamma edited."},
		} {
			writeFiles(t, dir, step.files)
			got := settle(t, l, "the edit", func(s *Set) bool {
				if step.shows == "" {
					sk, ok := s.Get("e")
					return ok && sk.Status == StatusBroken
				}
				for _, sk := range s.Skills {
					if sk.Description() == step.shows {
						return true
					}
				}
				return false
			})
			sameAsFresh(t, dir, got)
		}
		if n := l.patches.Load(); n < 3 {
			t.Fatalf("watch=%v: only %d of the reloads patched the last Set", watch, n)
		}
		// Watched, an edit of a skill folder's file loads that folder's
		// entry alone (patchRoot), without listing the folder.
		if n := l.rootPatches.Load(); watch && n < 3 {
			t.Fatalf("only %d of the watched reloads patched the skills folder's last load", n)
		}
		if watch {
			ws.Close()
		}
	}
}
