package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/workspace"
)

// Class: paths. A workspace cannot move its memory database outside
// itself with a symlink: not a symlinked .loom/, not a symlinked
// memory.db, not a symlinked -wal file. The operator still can.
func TestMemoryStoreLocationRefusesSymlinks(t *testing.T) {
	outside := t.TempDir()
	for name, setup := range map[string]func(root string){
		".loom": func(root string) { os.Symlink(outside, filepath.Join(root, ".loom")) },
		"memory.db": func(root string) {
			os.Mkdir(filepath.Join(root, ".loom"), 0o700)
			os.Symlink(filepath.Join(outside, "x.db"), filepath.Join(root, ".loom", "memory.db"))
		},
		"memory.db-wal": func(root string) {
			os.Mkdir(filepath.Join(root, ".loom"), 0o700)
			os.Symlink(filepath.Join(outside, "x"), filepath.Join(root, ".loom", "memory.db-wal"))
		},
		"inside symlink": func(root string) {
			os.Mkdir(filepath.Join(root, "real"), 0o700)
			os.Symlink("real", filepath.Join(root, ".loom"))
		},
	} {
		root := t.TempDir()
		setup(root)
		_, err := config.MemoryStoreLocation(root, nil)
		if !errors.Is(err, workspace.ErrSymlink) {
			t.Errorf("%s: err = %v, want a symlink refusal", name, err)
		}
	}
	root := t.TempDir()
	got, err := config.MemoryStoreLocation(root, nil)
	if err != nil || got != filepath.Join(root, ".loom", "memory.db") {
		t.Errorf("plain workspace: %q, %v", got, err)
	}
	os.Symlink(outside, filepath.Join(root, ".loom"))
	t.Setenv(config.EnvMemoryDB, filepath.Join(outside, "op.db"))
	if got, err := config.MemoryStoreLocation(root, nil); err != nil || got != filepath.Join(outside, "op.db") {
		t.Errorf("operator's choice: %q, %v", got, err)
	}
}
