package memory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/workspace"
)

func TestSelectStored(t *testing.T) {
	root := t.TempDir()
	path := DBPath(root)
	sel, err := SelectStored(ctx, path, Query{}, DefaultCategories, 100, byteCounter{}, SelectOptions{})
	if err != nil || sel.Chosen != 0 || sel.Budget != 100 {
		t.Fatalf("no database: %+v, %v", sel, err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("SelectStored created %s", filepath.Dir(path))
	}

	s, err := Open(root, WithNow(clock()))
	if err != nil {
		t.Fatal(err)
	}
	add(t, s, NewMemory{Category: "global_rule", Content: "Workspace rule."})
	add(t, s, NewMemory{Category: "personal_fact", Content: "Alex fact.", User: "alex"})
	add(t, s, NewMemory{Category: "personal_fact", Content: "From chat 7.", User: "alex", Chat: "c7"})
	add(t, s, NewMemory{Category: "personal_fact", Content: "Bob fact.", User: "bob"})
	s.Close()

	sel, err = SelectStored(ctx, path, Query{User: "alex"}, DefaultCategories, 1000, byteCounter{}, SelectOptions{ExcludeChat: "c7"})
	if err != nil {
		t.Fatal(err)
	}
	if got := groupContents(sel); got != "global_rule:Workspace rule. personal_fact:Alex fact." {
		t.Errorf("alex, excluding c7: %s", got)
	}
	if len(sel.LeftOut) != 1 || sel.LeftOut[0].Reason != ReasonCurrentChat || sel.LeftOut[0].Memory.Content != "From chat 7." {
		t.Errorf("left out: %+v", sel.LeftOut)
	}

	// A corrupt database: an error to report, and a diagnostic naming the
	// file relative to the workspace.
	if err := os.WriteFile(path, []byte(strings.Repeat("not sqlite ", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	_, err = SelectStored(ctx, path, Query{}, DefaultCategories, 1000, byteCounter{}, SelectOptions{})
	var de *DBError
	if !errors.As(err, &de) {
		t.Fatalf("corrupt database: err = %v", err)
	}
	d := de.Diagnostic(root)
	if d.Path != ".loom/memory.db" || d.Severity != workspace.Error || d.Code != "memory.db" || !strings.Contains(d.Message, "not a SQLite database") {
		t.Errorf("diagnostic = %+v", d)
	}
}

func groupContents(sel Selection) string {
	var parts []string
	for _, g := range sel.Groups {
		var cs []string
		for _, m := range g.Memories {
			cs = append(cs, m.Content)
		}
		parts = append(parts, g.Category.Name+":"+strings.Join(cs, "|"))
	}
	return strings.Join(parts, " ")
}
