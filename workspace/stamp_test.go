package workspace_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomctx/loom/workspace"
)

// waitStamp waits for the stamp of rel to leave old, and fails after a while.
func waitStamp(t *testing.T, ws *workspace.Workspace, rel string, old uint64) uint64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s, ok := ws.TreeStamp(rel)
		if !ok {
			t.Fatalf("%s: stamp not vouched for", rel)
		}
		if s != old {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: the stamp did not move after a change", rel)
	return 0
}

// A change moves the stamp of its file and of every folder above it, and
// leaves the stamps of other folders alone.
func TestTreeStamp(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "skills", "a", "SKILL.md"), "a\n")
	write(t, filepath.Join(root, "skills", "b", "SKILL.md"), "b\n")
	write(t, filepath.Join(root, "SOUL.md"), "soul\n")
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ws.TreeStamp("skills"); ok {
		t.Fatal("a stamp was vouched for without a watch")
	}
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, rel := range []string{"skills/a/SKILL.md", "skills/b/SKILL.md", "SOUL.md"} {
		if _, err := ws.Load(rel); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func(rel string) uint64 {
		s, ok := ws.TreeStamp(rel)
		if !ok {
			t.Fatalf("%s: not vouched for while watching", rel)
		}
		return s
	}
	skills, a, b, soul := stamp("skills"), stamp("skills/a"), stamp("skills/b"), stamp("SOUL.md")
	write(t, filepath.Join(root, "skills", "a", "SKILL.md"), "a, edited\n")
	waitStamp(t, ws, "skills/a", a)
	if stamp("skills") == skills {
		t.Error("the folder above the edit kept its stamp")
	}
	if stamp("skills/b") != b || stamp("SOUL.md") != soul {
		t.Error("an edit moved the stamp of something it did not touch")
	}
	if names, ok := ws.ChangedSince("skills", skills); !ok || len(names) != 1 || names[0] != "a" {
		t.Errorf("ChangedSince(skills) = %v, %v; want [a]", names, ok)
	}
	if names, ok := ws.ChangedSince("", soul); !ok || len(names) != 1 || names[0] != "skills" {
		t.Errorf("ChangedSince(root) = %v, %v; want [skills]", names, ok)
	}
	if names, ok := ws.ChangedSince("memory", stamp("memory")); !ok || len(names) != 0 {
		t.Errorf("ChangedSince(memory) = %v, %v; want nothing", names, ok)
	}
	// A new skill folder moves the stamp of skills/.
	skills = stamp("skills")
	write(t, filepath.Join(root, "skills", "c", "SKILL.md"), "c\n")
	waitStamp(t, ws, "skills", skills)

	// Once a read follows a symlink, no stamp is vouched for: the link's
	// path does not name what changes behind it.
	if err := os.Symlink(filepath.Join(root, "skills", "b"), filepath.Join(root, "skills", "link")); err != nil {
		t.Fatal(err)
	}
	ws.Load("skills/link/SKILL.md")
	if _, ok := ws.TreeStamp("skills"); ok {
		t.Error("a stamp was vouched for after a read through a symlink")
	}
}

// A folder made where nothing was read before (no watch inside it yet)
// moves the stamps of every path under it, and ChangedSince under it says
// it cannot tell: agent/skills/ made in one go is seen through the event
// on agent alone.
func TestTreeStampFolderAbove(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "SOUL.md"), "soul\n")
	ws := watched(t, root)
	if _, err := ws.ReadDir("agent/skills"); err == nil {
		t.Fatal("agent/skills is there before it was made")
	}
	deep, ok := ws.TreeStamp("agent/skills")
	if !ok {
		t.Fatal("not vouched for while watching")
	}
	other, _ := ws.TreeStamp("skills")
	write(t, filepath.Join(root, "agent", "skills", "x.md"), "x\n")
	waitStamp(t, ws, "agent/skills", deep)
	if names, ok := ws.ChangedSince("agent/skills", deep); ok {
		t.Errorf("ChangedSince(agent/skills) = %v, true after agent/ was made; want false", names)
	}
	if s, _ := ws.TreeStamp("skills"); s != other {
		t.Error("making agent/ moved the stamp of skills/")
	}
}

// A workspace made from an fs.FS never changes, so its stamps always hold.
func TestTreeStampFS(t *testing.T) {
	ws := workspace.OpenFS(os.DirFS(t.TempDir()))
	if _, ok := ws.TreeStamp("x"); !ok {
		t.Error("an fs.FS workspace's stamp is not vouched for")
	}
}
