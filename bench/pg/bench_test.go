package pg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
)

// BenchmarkStores times one client's requests on each store, in the same
// run: PostgreSQL on a unix socket against SQLite and session files.
//
//	bash scripts/pg-test.sh go test -run '^$' -bench Stores -count 6 ./bench/pg/
func BenchmarkStores(b *testing.B) {
	dsn := testenv.PostgresDSN(b)
	ctx := context.Background()
	var r [6]byte
	rand.Read(r[:])
	ws := "benchstores/" + hex.EncodeToString(r[:])
	db, err := pgstore.Open(ctx, dsn, pgstore.WithMaxConns(4))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	dir := b.TempDir()
	sq, err := memory.OpenSQLite(filepath.Join(dir, "memory.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer sq.Close()
	mems := map[string]memory.Store{
		"sqlite":          sq,
		"postgres":        db.Memory(ws),
		"postgres-cached": db.Memory(ws, pgstore.WithCache()),
	}
	// 200 memories for one user and the workspace: a render's read.
	for i := range 200 {
		user := ""
		if i%2 == 0 {
			user = "alex"
		}
		n := memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("Seed fact %d about the user.", i), User: user}
		if _, err := sq.Add(ctx, n); err != nil {
			b.Fatal(err)
		}
		if _, err := mems["postgres"].Add(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	for _, name := range []string{"sqlite", "postgres", "postgres-cached"} {
		s := mems[name]
		b.Run("List/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.List(ctx, memory.Query{User: "alex"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, name := range []string{"sqlite", "postgres"} {
		s := mems[name]
		b.Run("AddSupersede/"+name, func(b *testing.B) {
			prev := ""
			for b.Loop() {
				ms, err := s.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: "A changing fact.", User: "bob", Supersedes: prev})
				if err != nil {
					b.Fatal(err)
				}
				prev = ms[0].ID
			}
		})
	}
	sessions := map[string]session.Store{
		"files":    session.NewFileStore(filepath.Join(dir, "sessions"), session.FileOptions{LockWait: time.Minute}),
		"postgres": session.NewPGStore(db, ws),
	}
	turn := []messages.Message{
		{Role: messages.RoleUser, Content: messages.TextContent("What is the capital of France?")},
		{Role: messages.RoleAssistant, Content: messages.TextContent("Paris.")},
	}
	for _, name := range []string{"files", "postgres"} {
		st := sessions[name]
		// A 40-turn session, loaded then appended to: a turn's store work.
		for range 40 {
			if err := st.Append(ctx, "bench", turn...); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("SessionTurn/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, err := st.Load(ctx, "bench"); err != nil {
					b.Fatal(err)
				}
				if err := st.Append(ctx, "bench", turn...); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := st.Trim(ctx, "bench", 2); err != nil { // keep it at 40 turns
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
