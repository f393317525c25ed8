package memory

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomctx/loom/workspace"
)

// Stamp moves on a write and not on a read, whether the read's
// connection is the only one (SQLite then creates and removes -wal and
// -shm) or another stays open (it then re-permissions -wal).
func TestStampMovesOnWritesOnly(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(root, ".loom", "memory.db")
	open := func(t *testing.T) Store {
		t.Helper()
		store, err := OpenSQLite(db)
		if err != nil {
			t.Fatal(err)
		}
		return store
	}
	add := func(t *testing.T, store Store, content string) {
		t.Helper()
		if _, err := store.Add(context.Background(), NewMemory{Category: "personal_fact", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, write func()) {
		before := Stamp(db)
		for range 3 {
			store := open(t)
			if _, err := store.List(context.Background(), Query{}); err != nil {
				t.Fatal(err)
			}
			store.Close()
			time.Sleep(5 * time.Millisecond)
		}
		if after := Stamp(db); after != before {
			t.Errorf("reading moved the stamp from %s to %s", before, after)
		}
		write()
		if after := Stamp(db); after == before {
			t.Errorf("a write left the stamp at %s", before)
		}
	}
	os.MkdirAll(filepath.Dir(db), 0o755)
	first := open(t)
	add(t, first, "The user prefers metric units.")
	first.Close()

	t.Run("alone", func(t *testing.T) {
		check(t, func() {
			store := open(t)
			defer store.Close()
			add(t, store, "The user lives in Lyon.")
		})
	})
	t.Run("another connection open", func(t *testing.T) {
		held := open(t)
		defer held.Close()
		check(t, func() { add(t, held, "The user cycles to work.") })
	})
}

// A change of the database's files lets a read through once, then stops
// it; a write, or any other file in the change, is let through.
func TestReadFilter(t *testing.T) {
	root := t.TempDir()
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// touch opens the database, adds a memory of content (or, with "",
	// only lists them) and closes it.
	touch := func(content string) {
		t.Helper()
		s, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if content == "" {
			_, err = s.List(context.Background(), Query{})
		} else {
			_, err = s.Add(context.Background(), NewMemory{Category: "personal_fact", Content: content})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	touch("Likes tea.")
	db := DatabaseOf(ws)
	if db != DBPath(root) {
		t.Fatalf("DatabaseOf = %q, want %q", db, DBPath(root))
	}
	f := NewReadFilter(ws)
	touch("")
	if !f.OnlyRead([]string{db + "-wal", db + "-shm"}) {
		t.Error("a read's side files were let through")
	}
	if f.OnlyRead([]string{db + "-wal", filepath.Join(root, "AGENTS.md")}) {
		t.Error("a change that names another file was stopped")
	}
	touch("Drives a van.")
	if f.OnlyRead([]string{db, db + "-wal"}) {
		t.Error("a write was stopped")
	}
	touch("")
	if !f.OnlyRead([]string{db + "-wal"}) {
		t.Error("a read after the write was let through")
	}
}
