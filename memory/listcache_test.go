package memory

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fresh is the workspace-wide active listing read from the database alone:
// the query for every scope is never kept, and is filtered here.
func fresh(t *testing.T, s *SQLite) []Memory {
	t.Helper()
	all, err := s.List(ctx, Query{AllUsers: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []Memory
	for _, m := range all {
		if m.User == "" {
			out = append(out, m)
		}
	}
	return out
}

func listed(t *testing.T, s *SQLite) []Memory {
	t.Helper()
	got, err := s.List(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// listedAnew lists as a new process would: a handle of its own, which
// saves the listing it makes.
func listedAnew(t *testing.T, root string) []Memory {
	t.Helper()
	h, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return listed(t, h)
}

func sameList(t *testing.T, what string, got, want []Memory) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// The kept listing is handed out while nothing is written, and never once
// anything is: every kind of write, through this handle or another one on
// the same file (another process), shows in the next listing.
func TestListCacheFollowsEveryWrite(t *testing.T) {
	s, root := openTest(t)
	other, err := Open(root, WithNow(clock()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a := add(t, s, NewMemory{Category: "global_rule", Content: "respond in French."})
	add(t, s, NewMemory{Category: "personal_fact", Content: "The user is Alex.", User: "alex"})

	check := func(what string) {
		t.Helper()
		before := listCacheHits.Load()
		sameList(t, what+" (listed again)", listedAnew(t, root), fresh(t, s))
		if listCacheHits.Load() != before {
			t.Fatalf("%s: the first listing after a write came from the cache", what)
		}
		sameList(t, what+" (kept)", listedAnew(t, root), fresh(t, s))
		if listCacheHits.Load() != before+1 {
			t.Fatalf("%s: an unchanged database was listed again", what)
		}
	}
	check("first")
	b := add(t, s, NewMemory{Category: "global_rule", Content: "answer briefly."})
	check("add")
	add(t, s, NewMemory{Category: "global_rule", Content: "answer very briefly.", Supersedes: b.ID})
	check("supersede")
	if err := s.Forget(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	check("forget")
	if _, err := other.Add(ctx, NewMemory{Category: "global_rule", Content: "from another handle"}); err != nil {
		t.Fatal(err)
	}
	check("add through another handle")
	if err := other.Import(ctx, []Memory{{ID: "m_imported0001", Category: "global_rule", Content: "imported", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}}); err != nil {
		t.Fatal(err)
	}
	check("import through another handle")
	// An import that fails (an id already there) rolls back whole, the
	// trigger it drops for its rows included: later writes still count.
	if err := other.Import(ctx, []Memory{{ID: "m_imported0001", Category: "global_rule", Content: "again"}}); err == nil {
		t.Fatal("a second import of the same id was taken")
	}
	var triggers int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memories' AND name LIKE 'memories_changed_%'`).Scan(&triggers); err != nil || triggers != 3 {
		t.Fatalf("%d change-counter triggers on memories after a failed import (%v), want 3", triggers, err)
	}
	add(t, s, NewMemory{Category: "global_rule", Content: "after a failed import"})
	check("add after a failed import")
	if _, err := other.db.Exec(`DELETE FROM memories WHERE id = ?`, "m_imported0001"); err != nil {
		t.Fatal(err)
	}
	check("delete by hand")
}

// A handle saves one listing at most: a long-lived process does not
// rewrite the file after each of its writes.
func TestListCacheSavedOncePerHandle(t *testing.T) {
	s, _ := openTest(t)
	add(t, s, NewMemory{Category: "global_rule", Content: "one"})
	listed(t, s)
	st1, err := os.Stat(s.listCachePath())
	if err != nil {
		t.Fatal(err)
	}
	add(t, s, NewMemory{Category: "global_rule", Content: "two"})
	sameList(t, "after a write", listed(t, s), fresh(t, s))
	st2, err := os.Stat(s.listCachePath())
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(st1, st2) {
		t.Fatal("the handle saved a second listing")
	}
}

// A kept file that does not read back whole, or is not a plain file, or
// belongs to another database, is never used: the listing comes from the
// database and the file is replaced. A symlink in its place is not followed,
// for reading or writing.
func TestListCacheUnusableFiles(t *testing.T) {
	s, root := openTest(t)
	for i := range 5 {
		add(t, s, NewMemory{Category: "global_rule", Content: fmt.Sprintf("rule %d", i)})
	}
	want := fresh(t, s)
	listedAnew(t, root)
	path := s.listCachePath()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Another database with the same number of writes, and so the same
	// counter, and its own kept listing.
	o, err := Open(filepath.Join(root, "other"), WithNow(clock()))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for i := range 5 {
		if _, err := o.Add(ctx, NewMemory{Category: "global_rule", Content: fmt.Sprintf("other %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	listedAnew(t, filepath.Join(root, "other"))
	foreign, err := os.ReadFile(o.listCachePath())
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside-list")
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x20
		return b
	}
	cases := map[string]func(){
		"a byte changed in a memory": func() { os.WriteFile(path, flip(len(good)/2), 0o600) },
		"a byte changed in the sum":  func() { os.WriteFile(path, flip(len(good)-1), 0o600) },
		"cut short":                  func() { os.WriteFile(path, good[:len(good)/2], 0o600) },
		"empty":                      func() { os.WriteFile(path, nil, 0o600) },
		"another format":             func() { os.WriteFile(path, []byte("LOOMLST9 something else entirely"), 0o600) },
		"another database's":         func() { os.WriteFile(path, foreign, 0o600) },
		"a folder":                   func() { os.Mkdir(path, 0o700) },
		"a symlink to a good copy outside": func() {
			os.WriteFile(outside, good, 0o600)
			os.Symlink(outside, path)
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			os.RemoveAll(path)
			spoil()
			hits := listCacheHits.Load()
			sameList(t, name, listedAnew(t, root), want)
			if listCacheHits.Load() != hits {
				t.Fatal("the spoilt file was used")
			}
			if name == "a folder" {
				return // rename cannot replace a folder; the listing still comes from the database
			}
			if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
				t.Fatalf("the file was not replaced by a good one: %v %v", st, err)
			}
			sameList(t, name+", kept again", listedAnew(t, root), want)
			if listCacheHits.Load() != hits+1 {
				t.Fatal("the replaced file was not used")
			}
		})
	}
	if b, _ := os.ReadFile(outside); !bytes.Equal(b, good) {
		t.Fatal("a write went through the symlink to the file outside")
	}
	if n := listCacheBad.Load(); n == 0 {
		t.Fatal("no unusable file was counted")
	}
}

// Listings kept and used by several handles while another writes: each
// listing is newest first with no memory twice, and once the writer is
// done every handle lists exactly what the database holds. Run it with
// -race.
func TestListCacheConcurrent(t *testing.T) {
	s, root := openTest(t)
	add(t, s, NewMemory{Category: "global_rule", Content: "first"})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	handles := make([]*SQLite, 3)
	for i := range handles {
		h, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		handles[i] = h
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := h.List(ctx, Query{})
				if err != nil {
					t.Error(err)
					return
				}
				seen := map[string]bool{}
				for j, m := range got {
					if seen[m.ID] || j > 0 && m.CreatedAt.After(got[j-1].CreatedAt) {
						t.Errorf("listing out of order or with a memory twice: %v", got)
						return
					}
					seen[m.ID] = true
				}
			}
		}()
	}
	for i := range 40 {
		if _, err := s.Add(ctx, NewMemory{Category: "global_rule", Content: fmt.Sprintf("rule %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	want := fresh(t, s)
	if len(want) != 41 {
		t.Fatalf("%d memories", len(want))
	}
	for i, h := range handles {
		sameList(t, fmt.Sprintf("handle %d", i), listed(t, h), want)
	}
}

// Whatever bytes the file holds, decoding never panics, and what it
// accepts is exactly what encoding writes.
func FuzzDecodeList(f *testing.F) {
	f.Add(encodeList("k", []Memory{{ID: "m_1", Category: "global_rule", Content: "x", CreatedAt: time.Unix(-5, 7).UTC()}}))
	f.Add(encodeList("", nil))
	f.Add([]byte(listCacheMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, key, err := decodeList(bytes.Clone(data)) // it keeps what it is given
		if err != nil {
			return
		}
		if again := encodeList(key, ms); !bytes.Equal(again, data) {
			t.Fatalf("decoded %q and %v, which encode differently", key, ms)
		}
	})
}
