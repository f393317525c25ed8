package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/storetest"
)

var ctx = context.Background()

func openDB(t testing.TB, opts ...Option) *DB {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	db, err := Open(c, dsn, append([]Option{WithMaxConns(8)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// workspaceName is unique per call, so tests share one database without
// seeing each other's rows.
func workspaceName(t testing.TB) string {
	var b [6]byte
	rand.Read(b[:])
	return t.Name() + "/" + hex.EncodeToString(b[:])
}

// Every handle is its own DB (pool and listener), as a separate replica.
func TestPGConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		ws := workspaceName(t)
		return func(t *testing.T, cfg storetest.Config) memory.Store {
			s := openDB(t).Memory(ws, WithNow(cfg.Now), WithIDs(cfg.NewID), WithCategories(cfg.Categories))
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// A write on one replica reaches another replica's cached list through
// NOTIFY, without polling: the next list after the notice has it.
func TestPGCrossReplicaFreshness(t *testing.T) {
	ws := workspaceName(t)
	a := openDB(t).Memory(ws, WithCache())
	dbB := openDB(t)
	b := dbB.Memory(ws, WithCache())
	heard := make(chan string, 16)
	dbB.OnChange(func(w, user string) {
		if w == ws {
			heard <- user
		}
	})
	for _, q := range []memory.Query{{User: "alex"}, {User: "bob"}, {AllUsers: true}} {
		if _, err := b.List(ctx, q); err != nil { // fills B's cache
			t.Fatal(err)
		}
	}
	var lat []time.Duration
	for i, user := range []string{"alex", "", "bob", "alex"} {
		start := time.Now()
		m, err := a.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("Fact %d", i), User: user})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-heard:
			if got != user {
				t.Errorf("notice for user %q, want %q", got, user)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no notice on replica B for a write on A")
		}
		lat = append(lat, time.Since(start))
		q := memory.Query{User: user}
		if user == "" {
			q = memory.Query{User: "bob"} // a workspace-wide memory is in every user's list
		}
		ms, err := b.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 || ms[0].ID != m[0].ID {
			t.Errorf("replica B's list %+v lacks %s written on A", q, m[0].ID)
		}
	}
	t.Logf("write on A → notice on B: %v", lat)
	// B's version moved with A's writes; a render cache keyed on it knows.
	v1, ok := b.Version()
	if !ok {
		t.Fatal("B is not listening")
	}
	if _, err := a.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: "One more."}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for v, _ := b.Version(); v == v1; v, _ = b.Version() {
		if time.Now().After(deadline) {
			t.Fatal("B's version did not move after a write on A")
		}
		time.Sleep(time.Millisecond)
	}
	// Cached lists are served without a query, and are copies.
	ms, _ := b.List(ctx, memory.Query{AllUsers: true})
	ms[0].Content = "changed by the caller"
	again, _ := b.List(ctx, memory.Query{AllUsers: true})
	if again[0].Content == "changed by the caller" {
		t.Errorf("the cache hands out its own slice")
	}
}

// The connection dropped in the middle of a write: nothing is half
// written, the write is retried on a fresh connection and stored once.
func TestPGConnectionKilledMidWrite(t *testing.T) {
	ws := workspaceName(t)
	db := openDB(t)
	admin := openDB(t, WithoutListen())
	var mu sync.Mutex
	kills := 1
	s := db.Memory(ws, withBeforeCommit(func(ctx context.Context, tx pgx.Tx) {
		mu.Lock()
		defer mu.Unlock()
		if kills == 0 {
			return
		}
		kills--
		var pid int
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Error(err)
			return
		}
		if _, err := admin.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Error(err)
		}
		time.Sleep(50 * time.Millisecond) // let the backend go
	}))
	defer s.Close()
	ms, err := s.Add(ctx,
		memory.NewMemory{Category: "global_rule", Content: "First."},
		memory.NewMemory{Category: "global_rule", Content: "Second."})
	if err != nil {
		t.Fatalf("add across a killed connection: %v", err)
	}
	all, err := s.List(ctx, memory.Query{AllUsers: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != ms[1].ID || all[1].ID != ms[0].ID {
		t.Errorf("after the retry: %+v, want exactly the two added", all)
	}
	// Import too: all of it, once.
	kills = 1
	in := []memory.Memory{{ID: "i1", Category: "global_rule", Content: "x"}, {ID: "i2", Category: "global_rule", Content: "y"}}
	if err := s.Import(ctx, in); err != nil {
		t.Fatalf("import across a killed connection: %v", err)
	}
	all, _ = s.List(ctx, memory.Query{AllUsers: true, All: true})
	if len(all) != 4 {
		t.Errorf("%d memories, want 4", len(all))
	}
}

// A server that cannot be reached gives an error matching
// memory.ErrUnavailable (a server answers 503), never one showing the DSN.
func TestPGUnavailable(t *testing.T) {
	testenv.PostgresDSN(t)
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := Open(c, "host=/nonexistent/loom port=5432 user=loom password=sekrit dbname=x connect_timeout=2")
	if !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("unreachable server: err = %v, want ErrUnavailable", err)
	}
	if err != nil && strings.Contains(err.Error(), "sekrit") {
		t.Errorf("the password is in the error: %v", err)
	}
	_, err = Open(c, "postgres://loom:sekrit@[bad")
	if err == nil || strings.Contains(err.Error(), "sekrit") {
		t.Errorf("bad DSN: err = %v", err)
	}
}

// A schema newer than this loom is refused with a clear error.
func TestPGNewerSchema(t *testing.T) {
	db := openDB(t, WithoutListen())
	// In a transaction that is rolled back, so other tests keep the schema.
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE loom_schema SET version = 999`); err != nil {
		t.Fatal(err)
	}
	var v int
	tx.QueryRow(ctx, `SELECT max(version) FROM loom_schema`).Scan(&v)
	if v != 999 {
		t.Fatal("update did not take")
	}
	err = migrateTx(ctx, tx)
	if err == nil || !strings.Contains(err.Error(), "newer than this loom") {
		t.Errorf("newer schema: err = %v", err)
	}
}

// FreshVersion counts the committed changes a user's prompt depends on:
// the user's own and workspace-wide ones, not another user's; and a list
// read right after it holds a write another replica acknowledged, even
// from a cache filled before the write.
func TestPGFreshVersion(t *testing.T) {
	ws := workspaceName(t)
	a := openDB(t).Memory(ws)
	b := openDB(t).Memory(ws, WithCache())
	v0, err := b.FreshVersion(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.List(ctx, memory.Query{User: "ann"}); err != nil { // fills b's cache
		t.Fatal(err)
	}
	add := func(user, content string) {
		t.Helper()
		if _, err := a.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: content, User: user}); err != nil {
			t.Fatal(err)
		}
	}
	add("bob", "Bob likes jazz.")
	if v, _ := b.FreshVersion(ctx, "ann"); v != v0 {
		t.Errorf("bob's write moved ann's version %d → %d", v0, v)
	}
	add("ann", "Ann likes folk.")
	v1, _ := b.FreshVersion(ctx, "ann")
	list, err := b.List(ctx, memory.Query{User: "ann"})
	if err != nil || v1 <= v0 || len(list) != 1 || list[0].Content != "Ann likes folk." {
		t.Fatalf("after ann's write: version %d → %d, list %v, %v", v0, v1, list, err)
	}
	add("", "The team ships on Fridays.")
	v2, _ := b.FreshVersion(ctx, "ann")
	list, _ = b.List(ctx, memory.Query{User: "ann"})
	if v2 <= v1 || len(list) != 2 {
		t.Fatalf("after a workspace-wide write: version %d → %d, list %v", v1, v2, list)
	}
	// A consolidation's MEMORY.md moves it too.
	if err := a.db.Sessions(ws).Consolidate(ctx, "k", 0, 0, MemoryFiles{User: "ann", Memory: "# Memory\n"}); err != nil {
		t.Fatal(err)
	}
	if v3, _ := b.FreshVersion(ctx, "ann"); v3 <= v2 {
		t.Errorf("MEMORY.md written, version %d → %d", v2, v3)
	}
}
