package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/workspace"
)

// max_file_size in loom.yaml reaches the door, both ways: above the default
// it admits a file the default refuses, below it refuses one the default
// admits, and removing it restores the default.
func TestMaxFileSizeFromLoomYAML(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("AGENTS.md", strings.Repeat("a", workspace.DefaultMaxFileSize+100))
	write("SOUL.md", strings.Repeat("s", 3000))
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	load := func() {
		t.Helper()
		if _, err := config.Load(ws); err != nil {
			t.Fatal(err)
		}
	}
	tooLarge := func(rel string) bool { _, err := ws.Load(rel); return errors.Is(err, workspace.ErrTooLarge) }

	load()
	if !tooLarge("AGENTS.md") || tooLarge("SOUL.md") {
		t.Fatal("default cap not in force")
	}
	write("loom.yaml", "max_file_size: 2097152\n")
	load()
	if tooLarge("AGENTS.md") || tooLarge("SOUL.md") {
		t.Error("raised cap: AGENTS.md still refused")
	}
	write("loom.yaml", "max_file_size: 2048\n")
	load()
	if !tooLarge("SOUL.md") {
		t.Error("lowered cap: SOUL.md admitted")
	}
	if err := ws.WriteFile("memory.md", []byte(strings.Repeat("m", 3000)), 0o600); !errors.Is(err, workspace.ErrTooLarge) {
		t.Errorf("lowered cap: a 3000-byte write = %v", err)
	}
	os.Remove(filepath.Join(root, "loom.yaml"))
	load()
	if !tooLarge("AGENTS.md") || tooLarge("SOUL.md") {
		t.Error("default not restored after loom.yaml went away")
	}
}
