package memory

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSearch(t *testing.T) {
	ws := t.TempDir()
	// No database yet: nothing found, nothing created.
	if out := mustRun(t, "search", "-w", ws, "--json", "anything"); strings.TrimSpace(out) != "[]" {
		t.Errorf("search without a store: %q, want []", out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".loom")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("search made .loom: %v", err)
	}
	mustRun(t, "add", "-w", ws, "--category", "personal_fact", "--user", "ana", "Ana runs marathons every spring")
	mustRun(t, "add", "-w", ws, "--category", "personal_fact", "--user", "ana", "Ana keeps bees on her roof")
	mustRun(t, "add", "-w", ws, "--category", "personal_fact", "--user", "bob", "Bob runs a bakery")
	mustRun(t, "add", "-w", ws, "Answer in short sentences when running reports")

	var got []map[string]any
	out := mustRun(t, "search", "-w", ws, "--user", "ana", "--json", `Is she "running" the NEAR(marathon*) again?`)
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("search --json: %v\n%s", err, out)
	}
	if len(got) != 2 || got[0]["content"] != "Ana runs marathons every spring" || got[0]["user"] != "ana" || got[1]["user"] != "" {
		t.Fatalf("search --json:\n%s", out)
	}
	for _, k := range []string{"id", "content", "category", "user", "score"} {
		if _, ok := got[0][k]; !ok {
			t.Errorf("search --json lacks %q: %v", k, got[0])
		}
	}
	if len(got[0]) != 5 {
		t.Errorf("search --json has other keys: %v", got[0])
	}
	if s0, s1 := got[0]["score"].(float64), got[1]["score"].(float64); s0 < s1 || s1 <= 0 {
		t.Errorf("scores %v, %v: want best first, positive", s0, s1)
	}
	out = mustRun(t, "search", "-w", ws, "--user", "ana", "--limit", "1", "running")
	if !strings.Contains(out, "Ana runs marathons") || strings.Count(out, "\n    ") != 1 {
		t.Errorf("search --limit 1:\n%s", out)
	}
	if _, _, err := run(t, "search", "-w", ws, "--limit", "0", "x"); err == nil || !strings.Contains(err.Error(), "--limit 0") {
		t.Errorf("--limit 0: %v", err)
	}
	if out := mustRun(t, "search", "-w", ws, "--json", "the of and ???"); strings.TrimSpace(out) != "[]" {
		t.Errorf("stop words only: %q, want []", out)
	}
}
