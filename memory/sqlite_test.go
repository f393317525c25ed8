package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

// clock returns a Now that starts at t0 and advances a minute per call.
func clock() func() time.Time {
	t := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Minute)
		return t
	}
}

func openTest(t *testing.T, opts ...Option) (*SQLite, string) {
	t.Helper()
	root := t.TempDir()
	s, err := Open(root, append([]Option{WithNow(clock())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, root
}

func add(t *testing.T, s *SQLite, n NewMemory) Memory {
	t.Helper()
	ms, err := s.Add(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	return ms[0]
}

func contents(ms []Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func TestAddListNewestFirst(t *testing.T) {
	s, root := openTest(t)
	if _, err := os.Stat(filepath.Join(root, ".loom", "memory.db")); err != nil {
		t.Fatalf("database not at the default path: %v", err)
	}
	a := add(t, s, NewMemory{Category: "global_rule", Content: " respond  in French "})
	add(t, s, NewMemory{Category: "personal_fact", Content: "The user is Alex", Chat: "c1"})
	add(t, s, NewMemory{Category: "personal_fact", Content: "Alex likes tea.", User: "alex"})
	if a.Content != "respond in French" || a.CreatedAt != time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC) {
		t.Errorf("added %+v", a)
	}
	if !strings.HasPrefix(a.ID, "m_") || len(a.ID) != 14 {
		t.Errorf("id %q is not m_ and 12 hex digits", a.ID)
	}
	got, err := s.List(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"The user is Alex", "respond in French"}; !equal(contents(got), want) {
		t.Errorf("workspace scope = %q, want %q", contents(got), want)
	}
	got, _ = s.List(ctx, Query{User: "alex"})
	if want := []string{"Alex likes tea.", "The user is Alex", "respond in French"}; !equal(contents(got), want) {
		t.Errorf("alex's scope = %q, want %q", contents(got), want)
	}
	got, _ = s.List(ctx, Query{AllUsers: true, ExcludeChat: "c1"})
	if want := []string{"Alex likes tea.", "respond in French"}; !equal(contents(got), want) {
		t.Errorf("excluding chat c1 = %q, want %q", contents(got), want)
	}
	if got[0].User != "alex" || got[0].Category != "personal_fact" {
		t.Errorf("round trip lost fields: %+v", got[0])
	}
}

func TestAddRejects(t *testing.T) {
	s, _ := openTest(t)
	_, err := s.Add(ctx, NewMemory{Category: "hobby", Content: "x"})
	var uc *UnknownCategoryError
	if !errors.As(err, &uc) {
		t.Errorf("unknown category: err = %v", err)
	}
	if _, err := s.Add(ctx, NewMemory{Category: "global_rule", Content: "  "}); !errors.Is(err, ErrEmptyContent) {
		t.Errorf("empty content: err = %v", err)
	}
	_, err = s.Add(ctx, NewMemory{Category: "global_rule", Content: strings.Repeat("word ", 1<<20/5)})
	var tl *ContentTooLongError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("1 MB content: err = %v", err)
	}
	// A batch with one bad memory writes none of them.
	_, err = s.Add(ctx, NewMemory{Category: "global_rule", Content: "good"}, NewMemory{Category: "global_rule", Content: ""})
	if err == nil {
		t.Error("batch with an empty memory succeeded")
	}
	if n := count(t, s, Query{AllUsers: true, All: true}); n != 0 {
		t.Errorf("%d rows after rejected adds, want 0", n)
	}
}

func count(t *testing.T, s *SQLite, q Query) int {
	t.Helper()
	ms, err := s.List(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

func TestSupersede(t *testing.T) {
	s, _ := openTest(t)
	old := add(t, s, NewMemory{Category: "global_rule", Content: "Respond in French."})
	nw := add(t, s, NewMemory{Category: "global_rule", Content: "Respond in German.", Supersedes: old.ID})
	active, _ := s.List(ctx, Query{})
	if want := []string{"Respond in German."}; !equal(contents(active), want) {
		t.Errorf("active = %q, want %q", contents(active), want)
	}
	all, _ := s.List(ctx, Query{All: true})
	if len(all) != 2 || all[1].ID != old.ID || all[1].SupersededBy != nw.ID {
		t.Errorf("with All: %+v", all)
	}

	// Superseding twice, or an id that does not exist, writes nothing.
	_, err := s.Add(ctx, NewMemory{Category: "global_rule", Content: "Respond in Dutch.", Supersedes: old.ID})
	if err == nil || !strings.Contains(err.Error(), "already superseded") {
		t.Errorf("superseding a superseded memory: err = %v", err)
	}
	_, err = s.Add(ctx,
		NewMemory{Category: "global_rule", Content: "First of a batch."},
		NewMemory{Category: "global_rule", Content: "Respond in Dutch.", Supersedes: "m_nosuchmemory"})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "m_nosuchmemory") {
		t.Errorf("unknown supersedes: err = %v", err)
	}
	if n := count(t, s, Query{All: true}); n != 2 {
		t.Errorf("%d rows after failed supersedes, want 2 (nothing written)", n)
	}

	// Within one batch, a later memory may supersede an earlier one.
	ids := []string{"m_a", "m_b"}
	s2, _ := openTest(t, WithIDs(func() string { id := ids[0]; ids = ids[1:]; return id }))
	if _, err := s2.Add(ctx,
		NewMemory{Category: "global_rule", Content: "Draft."},
		NewMemory{Category: "global_rule", Content: "Final.", Supersedes: "m_a"}); err != nil {
		t.Fatal(err)
	}
	if got := contents(mustList(t, s2, Query{})); !equal(got, []string{"Final."}) {
		t.Errorf("after in-batch supersede: %q", got)
	}
}

func mustList(t *testing.T, s *SQLite, q Query) []Memory {
	t.Helper()
	ms, err := s.List(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestForget(t *testing.T) {
	s, _ := openTest(t)
	m := add(t, s, NewMemory{Category: "personal_fact", Content: "The user is Alex."})
	add(t, s, NewMemory{Category: "personal_fact", Content: "The user works at Acme."})
	if err := s.Forget(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if got := contents(mustList(t, s, Query{})); !equal(got, []string{"The user works at Acme."}) {
		t.Errorf("active after forget = %q", got)
	}
	all := mustList(t, s, Query{All: true})
	if len(all) != 2 || !all[1].Forgotten {
		t.Errorf("forgotten memory not listed with All: %+v", all)
	}
	if err := s.Forget(ctx, "m_nosuchmemory"); !errors.Is(err, ErrNotFound) {
		t.Errorf("forget unknown id: err = %v", err)
	}
	// A forgotten memory cannot be superseded.
	_, err := s.Add(ctx, NewMemory{Category: "personal_fact", Content: "x", Supersedes: m.ID})
	if err == nil || !strings.Contains(err.Error(), "forgotten") {
		t.Errorf("superseding a forgotten memory: err = %v", err)
	}
}

func TestImport(t *testing.T) {
	s, _ := openTest(t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := []Memory{
		{ID: "a", Category: "global_rule", Content: "Old rule", CreatedAt: t0, SupersededBy: "b", User: "u"},
		{ID: "b", Category: "global_rule", Content: "New rule.", CreatedAt: t0.Add(time.Hour), User: "u", Chat: "c"},
	}
	if err := s.Import(ctx, ms); err != nil {
		t.Fatal(err)
	}
	all := mustList(t, s, Query{AllUsers: true, All: true})
	if len(all) != 2 || all[0].ID != "b" || all[0].User != "u" || all[0].Chat != "c" || !all[0].CreatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("imported: %+v", all)
	}
	if all[1].Content != "Old rule" || all[1].SupersededBy != "b" {
		t.Errorf("imported: %+v", all[1])
	}

	bad := []struct {
		ms   []Memory
		want string
	}{
		{[]Memory{{ID: "c", Category: "global_rule", Content: "x"}, {ID: "a", Category: "global_rule", Content: "y"}}, "already exists"},
		{[]Memory{{ID: "d", Category: "global_rule", Content: "x"}, {ID: "d", Category: "global_rule", Content: "y"}}, "twice"},
		{[]Memory{{ID: "e", Category: "hobby", Content: "x"}}, "unknown memory category"},
		{[]Memory{{ID: "f", Category: "global_rule", Content: ""}}, "empty"},
		{[]Memory{{Category: "global_rule", Content: "x"}}, "missing id"},
		{[]Memory{{ID: "g", Category: "global_rule", Content: "x", SupersededBy: "zz"}}, `superseded_by "zz"`},
	}
	for _, b := range bad {
		err := s.Import(ctx, b.ms)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("import %+v: err = %v, want it to mention %q", b.ms, err, b.want)
		}
	}
	if n := count(t, s, Query{AllUsers: true, All: true}); n != 2 {
		t.Errorf("%d rows after failed imports, want 2: an import is all or nothing", n)
	}
}

func TestOpenIfExists(t *testing.T) {
	root := t.TempDir()
	s, err := OpenIfExists(root)
	if err != nil || s != nil {
		t.Fatalf("OpenIfExists on an empty workspace = %v, %v; want nil, nil", s, err)
	}
	if _, err := os.Stat(filepath.Join(root, ".loom")); !os.IsNotExist(err) {
		t.Errorf("OpenIfExists created .loom: %v", err)
	}
	w, err := Open(root, WithNow(clock()))
	if err != nil {
		t.Fatal(err)
	}
	add(t, w, NewMemory{Category: "global_rule", Content: "Kept across opens."})
	w.Close()
	r, err := OpenIfExists(root)
	if err != nil || r == nil {
		t.Fatalf("OpenIfExists after Open = %v, %v", r, err)
	}
	defer r.Close()
	if got := contents(mustList(t, r, Query{})); !equal(got, []string{"Kept across opens."}) {
		t.Errorf("after reopen: %q", got)
	}
}

func TestSchemaVersion(t *testing.T) {
	s, _ := openTest(t)
	var v int
	if err := s.db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("schema_version = %d, %v; want %d", v, err, SchemaVersion())
	}
	var mode string
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var plan string
	rows, err := s.db.Query(`EXPLAIN QUERY PLAN SELECT id FROM memories WHERE superseded_by = '' AND forgotten = 0 AND user = '' ORDER BY created_s DESC, created_ns DESC, seq DESC`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, unused int
		var detail string
		rows.Scan(&id, &parent, &unused, &detail)
		plan += detail + "\n"
	}
	rows.Close()
	if !strings.Contains(plan, "memories_active") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("the prompt's query does not use the index without sorting:\n%s", plan)
	}

	// A database from a newer loom is refused, naming the file.
	if _, err := s.db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = OpenSQLite(s.Path())
	var de *DBError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), s.Path()) || !strings.Contains(err.Error(), "newer") {
		t.Errorf("newer schema: err = %v", err)
	}
}

func TestOpenBadFiles(t *testing.T) {
	dir := t.TempDir()

	notDB := filepath.Join(dir, "notes.db")
	os.WriteFile(notDB, []byte(strings.Repeat("These are notes, not a database.\n", 200)), 0o644)
	_, err := OpenSQLite(notDB)
	var de *DBError
	t.Logf("text file: %v", err)
	if !errors.As(err, &de) || de.Path != notDB || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Errorf("text file: err = %v", err)
	}

	// A real database whose schema page is overwritten with garbage.
	corrupt := filepath.Join(dir, "corrupt.db")
	s, err := OpenSQLite(corrupt, WithNow(clock()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		add(t, s, NewMemory{Category: "global_rule", Content: fmt.Sprintf("Rule number %d.", i)})
	}
	s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	s.Close()
	f, err := os.OpenFile(corrupt, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte(strings.Repeat("\xde\xad\xbe\xef", 900)), 100)
	f.Close()
	s, err = OpenSQLite(corrupt)
	if err == nil {
		_, err = s.List(ctx, Query{})
		s.Close()
	}
	t.Logf("corrupt file: %v", err)
	if !errors.As(err, &de) || de.Path != corrupt || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt file: err = %v", err)
	}

	// A folder where the file should be.
	folder := filepath.Join(dir, "folder.db")
	os.Mkdir(folder, 0o755)
	if _, err := OpenSQLite(folder); !errors.As(err, &de) || de.Path != folder {
		t.Errorf("folder: err = %v", err)
	}
}

func TestOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c %20 d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	add(t, s, NewMemory{Category: "global_rule", Content: "x"})
	if _, err := os.Stat(filepath.Join(dir, ".loom", "memory.db")); err != nil {
		t.Errorf("database not where asked: %v", err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// List reads only the columns its WHERE clause leaves open; every Memory it
// returns must still be whole: for each kind of query, the answer is the
// full listing (every column read) filtered by the query's rules.
func TestListFillsEveryField(t *testing.T) {
	s, _ := openTest(t)
	add(t, s, NewMemory{Category: "global_rule", Content: "respond in French.", Chat: "c1"})
	old := add(t, s, NewMemory{Category: "personal_fact", Content: "The user is Al.", User: "alex", Chat: "c2"})
	add(t, s, NewMemory{Category: "personal_fact", Content: "The user is Alex.", User: "alex", Supersedes: old.ID})
	gone := add(t, s, NewMemory{Category: "personal_fact", Content: "Bob likes coffee!", User: "bob", Chat: "c2"})
	if err := s.Forget(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	full, err := s.List(ctx, Query{AllUsers: true, All: true})
	if err != nil || len(full) != 4 {
		t.Fatalf("full listing: %d memories, %v", len(full), err)
	}
	for _, q := range []Query{
		{}, {User: "alex"}, {User: "bob"}, {AllUsers: true}, {All: true}, {User: "alex", All: true},
		{AllUsers: true, All: true}, {User: "alex", ExcludeChat: "c1"}, {AllUsers: true, All: true, ExcludeChat: "c2"},
	} {
		var want []Memory
		for _, m := range full {
			active := m.SupersededBy == "" && !m.Forgotten
			if (q.All || active) && (q.AllUsers || m.User == "" || m.User == q.User) && (q.ExcludeChat == "" || m.Chat != q.ExcludeChat) {
				want = append(want, m)
			}
		}
		got, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("List(%+v):\n got %v\nwant %v", q, got, want)
		}
	}
}
