package pg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// BenchmarkRenderMemories times a render whose inputs did not change, the
// common case, with the memories in the workspace's SQLite database and in
// PostgreSQL (where the render reads the change counter, one lookup, to
// know its cached memory section is current), in the same run.
//
//	bash scripts/pg-test.sh go test -run '^$' -bench RenderMemories -count 6 ./bench/pg/
func BenchmarkRenderMemories(b *testing.B) {
	dsn := testenv.PostgresDSN(b)
	ctx := context.Background()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("# Agent\nAnswer briefly.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	if err := ws.Watch(); err != nil {
		b.Skip("no watcher:", err)
	}
	db, err := pgstore.Open(ctx, dsn, pgstore.WithMaxConns(4))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var r [6]byte
	rand.Read(r[:])
	pg := db.Memory("benchrender/"+hex.EncodeToString(r[:]), pgstore.WithCache())
	defer pg.Close()
	dbPath := filepath.Join(dir, ".loom", "memory.db")
	os.MkdirAll(filepath.Dir(dbPath), 0o700)
	b.Setenv("LOOM_MEMORY_DB", dbPath)
	sq, err := memory.OpenSQLite(dbPath)
	if err != nil {
		b.Fatal(err)
	}
	defer sq.Close()
	for _, st := range []memory.Store{pg, sq} {
		for i := range 20 {
			if _, err := st.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: "Fact number " + string(rune('a'+i)) + " about Ann.", User: "ann"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name string
		src  prompt.MemorySource
	}{{"sqlite", nil}, {"postgres", pg}} {
		b.Run(c.name, func(b *testing.B) {
			bl := prompt.New(ws)
			defer bl.Close()
			if c.src != nil {
				bl.SetMemorySource(c.src)
			}
			opts := prompt.Options{User: "ann"}
			if _, err := bl.Render(ctx, opts); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := bl.Render(ctx, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
