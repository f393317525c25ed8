package memory_test

import (
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/storetest"
)

// The SQLite store passes the suite every store runs; each handle is a
// separate connection pool on one file, as separate processes would be.
func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "memory.db")
		return func(t *testing.T, cfg storetest.Config) memory.Store {
			s, err := memory.OpenSQLite(path, memory.WithNow(cfg.Now), memory.WithIDs(cfg.NewID), memory.WithCategories(cfg.Categories))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}
