package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestMemoryStoreLocation(t *testing.T) {
	t.Setenv(EnvMemoryDB, "")
	root := t.TempDir()
	got, err := MemoryStoreLocation(root, nil)
	if want := filepath.Join(root, ".loom", "memory.db"); err != nil || got != want {
		t.Errorf("default: %q, %v; want %q", got, err, want)
	}
	cfg, err := Parse("loom.yaml", []byte("memory:\n  db: data/./mem.db\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err = MemoryStoreLocation(root, cfg)
	if want := filepath.Join(root, "data", "mem.db"); err != nil || got != want {
		t.Errorf("loom.yaml: %q, %v; want %q", got, err, want)
	}

	// The operator wins, and may name any place.
	op := filepath.Join(t.TempDir(), "elsewhere.db")
	t.Setenv(EnvMemoryDB, op)
	if got, err = MemoryStoreLocation(root, cfg); err != nil || got != op {
		t.Errorf("operator: %q, %v; want %q", got, err, op)
	}
}

// loom.yaml may not send the store outside the workspace, neither when it
// is parsed nor when a hand-built Config reaches the resolver.
func TestMemoryStoreLocationRefusesOutside(t *testing.T) {
	t.Setenv(EnvMemoryDB, "")
	for _, db := range []string{"../other/memory.db", "/etc/memory.db", "a/../../x.db", "..", ".", `C:\x.db`, `sub\x.db`} {
		_, err := Parse("loom.yaml", []byte("name: x\nmemory:\n  db: '"+db+"'\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "loom.yaml:3: memory.db: ") {
			t.Errorf("parse memory.db %q: got %v", db, err)
		}
		cfg := Default()
		cfg.Memory.DB = db
		got, err := MemoryStoreLocation(t.TempDir(), cfg)
		if err == nil {
			t.Errorf("resolve memory.db %q: got %q and no error", db, got)
		}
	}
	_, err := Parse("loom.yaml", []byte("memory:\n  db: /abs/m.db\n"))
	if err == nil || !strings.Contains(err.Error(), "--memory-db or LOOM_MEMORY_DB") {
		t.Errorf("the error should say how the operator chooses an outside file: %v", err)
	}
}
