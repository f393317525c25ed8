package memory

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A database written by the first schema (created_at as Unix nanoseconds)
// is migrated to seconds and nanoseconds with every time kept, before 1970
// included, and its order and insertion tie-break unchanged.
func TestMigrateNanosecondTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	times := []time.Time{
		time.Date(1677, 9, 21, 0, 12, 43, 145224193, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC),
		time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC),
	}
	stmts := []string{migrations[0], `CREATE TABLE schema_version (version INTEGER NOT NULL)`, `INSERT INTO schema_version VALUES (1)`}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	for i, tm := range times {
		if _, err := db.Exec(`INSERT INTO memories (id, category, content, created_at) VALUES (?, 'global_rule', ?, ?)`,
			string(rune('a'+i)), "Memory "+string(rune('a'+i))+".", tm.UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.List(ctx, Query{AllUsers: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := "e d c b a" // newest first; e after d on the same time
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
		if want := times[m.ID[0]-'a']; !m.CreatedAt.Equal(want) {
			t.Errorf("%s: created_at %s, want %s", m.ID, m.CreatedAt.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
		}
	}
	if strings.Join(ids, " ") != wantIDs {
		t.Errorf("order after migration = %v, want %s", ids, wantIDs)
	}
	// New memories keep counting after the old ones.
	add(t, s, NewMemory{Category: "global_rule", Content: "After."})
}

// The database and the folder Open makes are private to the user, and
// SQLite's -wal and -shm files take the database's mode.
func TestPrivateFiles(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	root := t.TempDir()
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	add(t, s, NewMemory{Category: "global_rule", Content: "Private."})
	defer s.Close()
	dir := filepath.Join(root, ".loom")
	mode := func(p string) fs.FileMode {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	if m := mode(dir); m != 0o700 {
		t.Errorf(".loom is %o, want 700", m)
	}
	for _, name := range []string{"memory.db", "memory.db-wal", "memory.db-shm"} {
		if m := mode(filepath.Join(dir, name)); m != 0o600 {
			t.Errorf("%s is %o, want 600", name, m)
		}
	}
}

// holdWriteLock takes SQLite's write lock on path from another connection,
// as a long import in another process would, until release is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	return func() {
		db.Exec(`COMMIT`)
		db.Close()
	}
}

// A write that meets another process's long write waits for it, within
// the bound; past the bound it fails with a plain BusyError, never with
// SQLite's "database is locked".
func TestBusyWaitsThenFailsClearly(t *testing.T) {
	root := t.TempDir()
	s, err := Open(root, WithBusyWait(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release := holdWriteLock(t, s.Path())
	start := time.Now()
	_, err = s.Add(ctx, NewMemory{Category: "global_rule", Content: "Blocked."})
	var be *BusyError
	if !errors.As(err, &be) {
		t.Fatalf("add under a held lock: err = %v, want a *BusyError", err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("gave up after %s, before the 400ms bound", d)
	}
	for _, raw := range []string{"SQLITE_BUSY", "database is locked", "(5)"} {
		if strings.Contains(err.Error(), raw) {
			t.Errorf("error shows SQLite's words %q: %v", raw, err)
		}
	}
	if err := s.Forget(ctx, "m_x"); !errors.As(err, &be) {
		t.Errorf("forget under a held lock: err = %v", err)
	}
	if err := s.Import(ctx, []Memory{{ID: "i", Category: "global_rule", Content: "x"}}); !errors.As(err, &be) {
		t.Errorf("import under a held lock: err = %v", err)
	}
	// Readers are never blocked by a writer (WAL).
	if _, err := s.List(ctx, Query{}); err != nil {
		t.Errorf("list under a held lock: %v", err)
	}

	release()

	// Released within the bound, the write waits and succeeds.
	s2, err := Open(root, WithBusyWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	release = holdWriteLock(t, s.Path())
	go func() {
		time.Sleep(1500 * time.Millisecond) // past SQLite's own 1 s busy_timeout
		release()
	}()
	if _, err := s2.Add(ctx, NewMemory{Category: "global_rule", Content: "Waited."}); err != nil {
		t.Errorf("add after the lock is released: %v", err)
	}
}

// A large import in one handle and small writes in another, as two
// processes: every write succeeds (it waits for the import's transaction)
// and the import is whole.
func TestLargeImportBesideWriters(t *testing.T) {
	root := t.TempDir()
	imp, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	w, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	n := 20000
	if testing.Short() || raceEnabled {
		n = 2000
	}
	ms := make([]Memory, n)
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range ms {
		ms[i] = Memory{ID: "i" + strconv.Itoa(i), Category: "personal_fact", Content: "Imported fact number " + strconv.Itoa(i), CreatedAt: t0.Add(time.Duration(i) * time.Second)}
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- imp.Import(ctx, ms) }()
	adds := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			t.Logf("imported %d memories in %s beside %d adds", n, time.Since(start).Round(time.Millisecond), adds)
			got, err := w.List(ctx, Query{AllUsers: true, All: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n+adds {
				t.Errorf("%d memories, want %d imported + %d added", len(got), n, adds)
			}
			return
		default:
		}
		if _, err := w.Add(ctx, NewMemory{Category: "global_rule", Content: "Beside the import."}); err != nil {
			t.Fatalf("add beside an import: %v", err)
		}
		adds++
	}
}
