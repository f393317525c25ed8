package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/workspace"
)

// coldTree makes n skill files in nested folders, as a workspace holds them.
func coldTree(b *testing.B, n int) (string, []string) {
	b.Helper()
	root := b.TempDir()
	rels := make([]string, n)
	for i := range n {
		rel := fmt.Sprintf("skills/s%04d/SKILL.md", i)
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("---\nname: s\ndescription: "+strings.Repeat("word ", 40)+"\n---\nbody\n"), 0o644)
		rels[i] = rel
	}
	return root, rels
}

// BenchmarkLoadCold200 reads 200 files through a new door each time: one
// openat2, one fstat, one read per file.
func BenchmarkLoadCold200(b *testing.B) {
	root, rels := coldTree(b, 200)
	b.ReportAllocs()
	for b.Loop() {
		ws, err := workspace.Open(root)
		if err != nil {
			b.Fatal(err)
		}
		for _, rel := range rels {
			if _, err := ws.Load(rel); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLoadColdFloor200 is the floor: os.ReadFile of the same files,
// no confinement, no normalisation.
func BenchmarkLoadColdFloor200(b *testing.B) {
	root, rels := coldTree(b, 200)
	b.ReportAllocs()
	for b.Loop() {
		for _, rel := range rels {
			if _, err := os.ReadFile(filepath.Join(root, rel)); err != nil {
				b.Fatal(err)
			}
		}
	}
}
