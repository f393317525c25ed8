package memory

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"What is my favourite café in Zürich?", []string{"favourite", "café", "zürich"}},
		{`"NEAR(alpha beta, 2)" OR gamma* AND -delta ^eps col:zeta`, []string{"near", "alpha", "beta", "2", "gamma", "delta", "eps", "col", "zeta"}},
		{"quote\" inside\x00nul \xff\xfeinvalid", []string{"quote", "inside", "nul", "invalid"}},
		{"The the THE a I x 7", []string{"7"}},
		{"東京 データ 🚀 Ελλάδα", []string{"東京", "データ", "ελλάδα"}},
		{"   \t\n!!! ??? ***", nil},
		{strings.Repeat("z", 65) + " ok", []string{"ok"}},
		{"Run running RUN", []string{"run", "running"}},
	}
	for _, tc := range tests {
		if got := Terms(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Terms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A megabyte of distinct words stops at the cap, in order.
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "word%d ", i)
	}
	got := Terms(b.String())
	if len(got) != MaxQueryTerms || got[0] != "word0" || got[MaxQueryTerms-1] != fmt.Sprintf("word%d", MaxQueryTerms-1) {
		t.Errorf("1 MB query: %d terms, %q…", len(got), got[:min(3, len(got))])
	}
}

func searchIDs(t *testing.T, s *SQLite, q SearchQuery) []string {
	t.Helper()
	hits, err := s.Search(ctx, q)
	if err != nil {
		t.Fatalf("Search(%q): %v", q.Text, err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	return ids
}

func openSearchStore(t *testing.T) *SQLite {
	t.Helper()
	n := 0
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "memory.db"),
		WithIDs(func() string { n++; return fmt.Sprintf("m%d", n) }),
		WithNow(func() time.Time { return t0.Add(time.Duration(n) * time.Minute) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSearchSQLite(t *testing.T) {
	s := openSearchStore(t)
	add := func(user, content string) string {
		t.Helper()
		ms, err := s.Add(ctx, NewMemory{Category: "personal_fact", Content: content, User: user})
		if err != nil {
			t.Fatal(err)
		}
		return ms[0].ID
	}
	marathon := add("ana", "Ana runs marathons in the spring")       // m1
	cat := add("ana", "Ana has a cat called Miso")                   // m2
	shared := add("", "The team meets on Mondays to plan marathons") // m3
	bob := add("bob", "Bob runs a bakery")                           // m4
	old := add("ana", "Ana's sister lives in Lyon")                  // m5
	newer := add("ana", "Ana's sister lives in Lyon")                // m6, same text, newer

	// Stemming: "running" finds "runs"; the scope keeps Bob out and
	// brings the workspace's memories in.
	if got := searchIDs(t, s, SearchQuery{Text: "Is she still running?", User: "ana"}); !slices.Equal(got, []string{marathon}) {
		t.Errorf("running: %v, want [%s]", got, marathon)
	}
	if got := searchIDs(t, s, SearchQuery{Text: "marathon training", User: "ana"}); len(got) != 2 || !slices.Contains(got, shared) {
		t.Errorf("marathon: %v, want %s and %s", got, marathon, shared)
	}
	if got := searchIDs(t, s, SearchQuery{Text: "marathon", User: ""}); !slices.Equal(got, []string{shared}) {
		t.Errorf("workspace scope: %v, want [%s]", got, shared)
	}
	if got := searchIDs(t, s, SearchQuery{Text: "bakery", User: "ana"}); len(got) != 0 {
		t.Errorf("another user's memory found: %v", got)
	}
	// Equal scores: the newer first.
	if got := searchIDs(t, s, SearchQuery{Text: "sister Lyon", User: "ana"}); !slices.Equal(got, []string{newer, old}) {
		t.Errorf("tie: %v, want [%s %s]", got, newer, old)
	}
	// Matched words are the memory's own.
	hits, err := s.Search(ctx, SearchQuery{Text: "running cats", User: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	matched := map[string][]string{}
	for _, h := range hits {
		matched[h.ID] = h.Matched
		if h.Score <= 0 {
			t.Errorf("%s: score %v, want > 0", h.ID, h.Score)
		}
	}
	if !slices.Equal(matched[marathon], []string{"runs"}) || !slices.Equal(matched[cat], []string{"cat"}) {
		t.Errorf("matched: %v", matched)
	}
	// Forgotten and superseded memories are not found.
	if err := s.Forget(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, NewMemory{Category: "personal_fact", Content: "Ana's sister moved to Paris", User: "ana", Supersedes: newer}); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, s, SearchQuery{Text: "cat sister", User: "ana"}); slices.Contains(got, cat) || slices.Contains(got, newer) || len(got) != 2 {
		t.Errorf("after forget and supersede: %v", got)
	}
	_ = bob
}

// Hostile queries are text: none fails, none is read as FTS5 syntax.
func TestSearchHostileQueries(t *testing.T) {
	s := openSearchStore(t)
	if _, err := s.Add(ctx, NewMemory{Category: "personal_fact", Content: `Use "NEAR" and OR * in text`}); err != nil {
		t.Fatal(err)
	}
	queries := []string{
		`"`, `""`, `"unterminated`, `NEAR(`, `NEAR(a b, 3)`, `*`, `a*`, `^start`, `-`, `col:value`, `content:x`,
		`AND OR NOT`, `(((`, `)`, "\x00", "near\x00or", "\xff\xfe", strings.Repeat(`"*(`, 100000),
		strings.Repeat("word ", 200000), `{content category}: near`, `'; DROP TABLE memories; --`,
	}
	for _, q := range queries {
		if _, err := s.Search(ctx, SearchQuery{Text: q, Limit: 5}); err != nil {
			t.Errorf("Search(%.40q): %v", q, err)
		}
	}
	if got := searchIDs(t, s, SearchQuery{Text: `NEAR(or "*"`}); len(got) != 1 {
		t.Errorf("operators as words: %v, want the memory", got)
	}
	if got := searchIDs(t, s, SearchQuery{Text: `*** ??? "`}); got != nil {
		t.Errorf("no terms: %v, want nothing", got)
	}
}

// The index is written in the memory's transaction: a batch that fails
// leaves nothing in it, an import is indexed, and FTS5's own check agrees
// with the table.
func TestSearchIndexTransactional(t *testing.T) {
	s := openSearchStore(t)
	_, err := s.Add(ctx,
		NewMemory{Category: "personal_fact", Content: "Zanzibar trip planned"},
		NewMemory{Category: "personal_fact", Content: "Bad link", Supersedes: "nope"})
	if err == nil {
		t.Fatal("batch with a bad supersede was accepted")
	}
	if got := searchIDs(t, s, SearchQuery{Text: "zanzibar"}); got != nil {
		t.Errorf("failed batch is searchable: %v", got)
	}
	if err := s.Import(ctx, []Memory{{ID: "x1", Category: "global_rule", Content: "Quarterly zanzibar report."}}); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, s, SearchQuery{Text: "zanzibar"}); !slices.Equal(got, []string{"x1"}) {
		t.Errorf("import: %v", got)
	}
	if _, err := s.db.Exec(`INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')`); err != nil {
		t.Errorf("index integrity: %v", err)
	}
}

// A database made before the index (schema 3) is indexed when opened.
func TestMigrateIndexesExisting(t *testing.T) {
	path := databaseAt(t, 3,
		`INSERT INTO memories (id, category, content, created_s) VALUES ('old1', 'personal_fact', 'Prefers green tea.', 1)`,
		`INSERT INTO memories (id, category, content, created_s) VALUES ('old2', 'personal_fact', 'Drives a blue van.', 2)`)
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := searchIDs(t, s, SearchQuery{Text: "which teas"}); !slices.Equal(got, []string{"old1"}) {
		t.Errorf("migrated search: %v", got)
	}
}

// searchPlain is the reference for the search's fast path: every match
// ranked and joined, filtered and ordered by SQL, ties by recency in SQL.
func searchPlain(t *testing.T, s *SQLite, match string, from int64, user string, limit int) []Hit {
	t.Helper()
	rows, err := s.db.Query(`WITH ranked AS MATERIALIZED (
		SELECT rowid, rank FROM memories_fts WHERE memories_fts MATCH ?1 AND rowid >= ?2)
	SELECT m.seq, m.id, -ranked.rank FROM ranked JOIN memories m ON m.seq = ranked.rowid
	WHERE m.superseded_by = '' AND m.forgotten = 0 AND m.user IN ('', ?3)
	ORDER BY ranked.rank, m.created_s DESC, m.created_ns DESC, m.seq DESC LIMIT ?4`, match, from, user, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []Hit
	for rows.Next() {
		var h Hit
		if err := rows.Scan(&h.seq, &h.ID, &h.Score); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// The search's fast path (rows read best first, stopped at the limit once
// the score drops, ties ordered in Go) gives what the plain query gives,
// with many users, inactive memories, many ties, and the bound on rows
// for a common term.
func TestSearchMatchesPlain(t *testing.T) {
	s := openSearchStore(t)
	rng := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda")
	var ms []Memory
	for i := range 3000 {
		var b strings.Builder
		for range 3 + rng.IntN(8) {
			b.WriteString(words[rng.IntN(len(words))] + " ")
		}
		if i%500 == 0 {
			b.WriteString("omicron")
		}
		ms = append(ms, Memory{ID: fmt.Sprintf("r%d", i), Category: "personal_fact", Content: b.String(),
			User: []string{"", "u1", "u2", "u3", "u4"}[rng.IntN(5)], CreatedAt: time.Unix(int64(rng.IntN(50)), 0), Forgotten: rng.IntN(7) == 0})
	}
	if err := s.Import(ctx, ms); err != nil {
		t.Fatal(err)
	}
	st, err := s.searchStatements(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, q := range []string{"alpha", "beta gamma", "iota kappa lambda zeta", "theta omicron", "omicron"} {
		terms, from, err := st.selective(ctx, Terms(q))
		if err != nil {
			t.Fatal(err)
		}
		if q == "alpha" && (from == 0 || len(terms) != 1) {
			t.Errorf("alpha is in more than %d memories: want one term from a row > 0, got %q from %d", maxRankedRows, terms, from)
		}
		if q == "theta omicron" && !slices.Equal(terms, []string{"omicron"}) {
			t.Errorf("theta omicron: ranked %q, want the rare term alone", terms)
		}
		for _, user := range []string{"", "u2"} {
			for _, limit := range []int{1, 10, 300} {
				hits, err := s.Search(ctx, SearchQuery{Text: q, User: user, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				want := searchPlain(t, s, ftsQuery(terms), from, user, limit)
				if len(hits) != len(want) {
					t.Fatalf("%q user %q limit %d: %d hits, plain %d", q, user, limit, len(hits), len(want))
				}
				for i := range want {
					if hits[i].ID != want[i].ID || hits[i].Score != want[i].Score {
						t.Fatalf("%q user %q limit %d: hit %d is %s %v, plain %s %v", q, user, limit, i, hits[i].ID, hits[i].Score, want[i].ID, want[i].Score)
					}
					checked++
				}
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d hits compared", checked)
	}
}

// A bulk import leaves the full-text index in one segment (each segment
// costs every search a lookup per term); a small import into a large
// store does not rewrite the index.
func TestImportOptimizesIndex(t *testing.T) {
	s := openSearchStore(t)
	segments := func() int {
		t.Helper()
		var n int
		if err := s.db.QueryRow(`SELECT count(DISTINCT segid) FROM memories_fts_idx`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	z := newZipfText(5)
	if err := s.Import(ctx, z.memories(10000, "ana")); err != nil {
		t.Fatal(err)
	}
	if n := segments(); n != 1 {
		t.Errorf("after a bulk import: %d segments, want 1", n)
	}
	small := z.memories(50, "ana")
	for i := range small {
		small[i].ID = fmt.Sprintf("small%d", i)
	}
	if err := s.Import(ctx, small); err != nil {
		t.Fatal(err)
	}
	if n := segments(); n != 2 {
		t.Errorf("after a small import: %d segments, want 2 (not merged)", n)
	}
	if _, err := s.db.Exec(`INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')`); err != nil {
		t.Errorf("index integrity: %v", err)
	}
	if got := searchIDs(t, s, SearchQuery{Text: small[3].Content, User: "ana", Limit: 1}); !slices.Equal(got, []string{"small3"}) {
		t.Errorf("a small import's memory by its own text: %v", got)
	}
}

// Search after Close fails instead of opening connections again.
func TestSearchAfterClose(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, NewMemory{Category: "personal_fact", Content: "Likes green tea"}); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, s, SearchQuery{Text: "tea"}); len(got) != 1 {
		t.Fatalf("before Close: %v", got)
	}
	s.Close()
	if _, err := s.Search(ctx, SearchQuery{Text: "tea"}); err == nil {
		t.Error("Search after Close: no error")
	}
	if s.searchDB != nil {
		t.Error("Search after Close opened its connections again")
	}
}

// databaseAt makes a memory.db as schema version left it (its first
// migrations and their schema_version row), then runs stmts on it, and
// returns its path.
func databaseAt(t *testing.T, version int, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "memory.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all := append(slices.Clone(migrations[:version]), `CREATE TABLE schema_version (version INTEGER NOT NULL)`, fmt.Sprintf(`INSERT INTO schema_version VALUES (%d)`, version))
	for _, st := range append(all, stmts...) {
		if _, err := db.Exec(st); err != nil {
			t.Fatal(err)
		}
	}
	return path
}
