// Package storetest is the conformance suite every [memory.Store] runs:
// the SQLite store and the PostgreSQL store call [Run] from their tests, so
// both keep the same semantics (normalisation, caps, supersede in one
// transaction, the scope rule, no supersede loops, soft delete, import all
// or nothing with exact times, newest-first order, and concurrent writers
// on several handles to one store).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
)

// Config is what the suite asks of a store it opens.
type Config struct {
	Now        func() time.Time  // stamps created_at; never nil
	NewID      func() string     // makes ids; never nil
	Categories []memory.Category // nil means memory.DefaultCategories
}

// Opener opens a handle on one store's data. Every call opens a new handle
// on the same data (as a second process or replica would); the opener
// closes the handles when the test ends.
type Opener func(t *testing.T, cfg Config) memory.Store

// Factory makes a new, empty store for one test and returns its opener.
type Factory func(t *testing.T) Opener

var ctx = context.Background()

// Run runs the whole suite against the stores f makes.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"AddListScopes", testAddList},
		{"Rejects", testRejects},
		{"Supersede", testSupersede},
		{"SupersedeCycles", testCycles},
		{"Scope", testScope},
		{"Forget", testForget},
		{"Import", testImport},
		{"ImportTimes", testImportTimes},
		{"ImportCycles", testImportCycles},
		{"ExportOrder", testExportOrder},
		{"ConcurrentWriters", testConcurrent},
		{"RacingSupersedes", testRacingSupersedes},
		{"Search", testSearch},
		{"Vectors", testVectors},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f(t)) })
	}
}

// searchIDs is what a search for text in user's scope finds, best first.
func searchIDs(t *testing.T, s memory.Searcher, text, user string, limit int) []string {
	t.Helper()
	hits, err := s.Search(ctx, memory.SearchQuery{Text: text, User: user, Limit: limit})
	if err != nil {
		t.Fatalf("search %.40q: %v", text, err)
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
		if h.Score <= 0 {
			t.Errorf("search %q: %s scores %v, want > 0", text, h.ID, h.Score)
		}
	}
	return out
}

// testSearch runs for stores that are a [memory.Searcher]: stemmed words
// match, the scope rule holds, inactive memories are not found, newer
// comes first among equals, imports are searchable, and no text fails.
func testSearch(t *testing.T, open Opener) {
	st := std(open, t)
	s, ok := st.(memory.Searcher)
	if !ok {
		t.Skip("this store does not search")
	}
	a := add(t, st, memory.NewMemory{Category: "personal_fact", Content: "Ana runs marathons in the spring", User: "ana"})
	b := add(t, st, memory.NewMemory{Category: "personal_fact", Content: "Ana keeps three cats", User: "ana"})
	c := add(t, st, memory.NewMemory{Category: "global_rule", Content: "Plan the marathon relay every year"})
	add(t, st, memory.NewMemory{Category: "personal_fact", Content: "Bob runs a bakery", User: "bob"})
	d1 := add(t, st, memory.NewMemory{Category: "personal_fact", Content: "Ana's sister lives in Lyon", User: "ana"})
	d2 := add(t, st, memory.NewMemory{Category: "personal_fact", Content: "Ana's sister lives in Lyon", User: "ana"})
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("stemmed", searchIDs(t, s, "Is she still running?", "ana", 10), a.ID)
	if got := searchIDs(t, s, "marathons", "ana", 10); len(got) != 2 || !slices.Contains(got, c.ID) {
		t.Errorf("marathons for ana: %v, want %s and %s", got, a.ID, c.ID)
	}
	check("workspace scope", searchIDs(t, s, "marathons", "", 10), c.ID)
	check("another user's", searchIDs(t, s, "bakery", "ana", 10))
	check("newer first among equals", searchIDs(t, s, "sister Lyon", "ana", 10), d2.ID, d1.ID)
	check("limit", searchIDs(t, s, "sister Lyon", "ana", 1), d2.ID)
	hits, err := s.Search(ctx, memory.SearchQuery{Text: "cats and marathons", User: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.ID == b.ID && !slices.Equal(h.Matched, []string{"cats"}) {
			t.Errorf("matched words of %q: %q, want [cats]", h.Content, h.Matched)
		}
	}
	if err := st.Forget(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	e := add(t, st, memory.NewMemory{Category: "personal_fact", Content: "Ana's sister moved to Paris", User: "ana", Supersedes: d2.ID})
	check("inactive left out", searchIDs(t, s, "cats sister Lyon", "ana", 10), d1.ID, e.ID)
	if err := st.Import(ctx, []memory.Memory{{ID: "imp1", Category: "global_rule", Content: "Quarterly zanzibar report"}}); err != nil {
		t.Fatal(err)
	}
	check("imported", searchIDs(t, s, "Zanzibar", "ana", 10), "imp1")
	for _, q := range []string{`"`, `NEAR(a b)`, `*`, "a\x00b", "\xff", `'); DROP TABLE x; --`, `!(&|):*<->`, strings.Repeat("word ", 100000), "the of and"} {
		if _, err := s.Search(ctx, memory.SearchQuery{Text: q, User: "ana"}); err != nil {
			t.Errorf("search %.30q: %v", q, err)
		}
	}
	check("no terms", searchIDs(t, s, "the of and ???", "ana", 10))
}

// clock starts at t0 and advances a minute per call; safe for concurrent
// use.
func clock() func() time.Time {
	var n atomic.Int64
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)) * time.Minute) }
}

// ids gives "m1", "m2", …; prefix keeps handles apart.
func ids(prefix string) func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%sm%d", prefix, n.Add(1)) }
}

// idQueue gives the ids queued with next first, then "m1", "m2", …, so a
// test can name the id a memory is about to get.
type idQueue struct {
	mu     sync.Mutex
	queued []string
	n      int
}

func (q *idQueue) next(ids ...string) {
	q.mu.Lock()
	q.queued = append(q.queued, ids...)
	q.mu.Unlock()
}

func (q *idQueue) id() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queued) > 0 {
		id := q.queued[0]
		q.queued = q.queued[1:]
		return id
	}
	q.n++
	return fmt.Sprintf("m%d", q.n)
}

func std(open Opener, t *testing.T) memory.Store {
	return open(t, Config{Now: clock(), NewID: ids("")})
}

func add(t *testing.T, s memory.Store, n memory.NewMemory) memory.Memory {
	t.Helper()
	ms, err := s.Add(ctx, n)
	if err != nil {
		t.Fatalf("add %+v: %v", n, err)
	}
	if len(ms) != 1 {
		t.Fatalf("add returned %d memories", len(ms))
	}
	return ms[0]
}

func list(t *testing.T, s memory.Store, q memory.Query) []memory.Memory {
	t.Helper()
	ms, err := s.List(ctx, q)
	if err != nil {
		t.Fatalf("list %+v: %v", q, err)
	}
	return ms
}

func contents(ms []memory.Memory) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return strings.Join(out, " | ")
}

func want(t *testing.T, what string, ms []memory.Memory, w string) {
	t.Helper()
	if got := contents(ms); got != w {
		t.Errorf("%s = %q, want %q", what, got, w)
	}
}

var all = memory.Query{AllUsers: true, All: true}

func testAddList(t *testing.T, open Opener) {
	s := std(open, t)
	a := add(t, s, memory.NewMemory{Category: "global_rule", Content: " respond  in\tFrench "})
	add(t, s, memory.NewMemory{Category: "personal_fact", Content: "The user is Alex", Chat: "c1"})
	add(t, s, memory.NewMemory{Category: "personal_fact", Content: "Alex likes tea.", User: "alex"})
	add(t, s, memory.NewMemory{Category: "personal_fact", Content: "Bob likes coffee!", User: "bob", Chat: "c2"})
	// Stored as given, white space collapsed: nothing is added (#31).
	if a.Content != "respond in French" || a.ID != "m1" || !a.CreatedAt.Equal(time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC)) {
		t.Errorf("added %+v", a)
	}
	want(t, "workspace scope", list(t, s, memory.Query{}), "The user is Alex | respond in French")
	want(t, "alex's scope", list(t, s, memory.Query{User: "alex"}), "Alex likes tea. | The user is Alex | respond in French")
	want(t, "every scope without c1", list(t, s, memory.Query{AllUsers: true, ExcludeChat: "c1"}), "Bob likes coffee! | Alex likes tea. | respond in French")
	got := list(t, s, memory.Query{User: "bob"})
	if len(got) != 3 || got[0].User != "bob" || got[0].Chat != "c2" || got[0].Category != "personal_fact" {
		t.Errorf("bob's newest = %+v", got)
	}
	// Another handle on the same data sees every write at once.
	s2 := open(t, Config{Now: clock(), NewID: ids("x")})
	want(t, "second handle", list(t, s2, memory.Query{AllUsers: true}), "Bob likes coffee! | Alex likes tea. | The user is Alex | respond in French")
}

func testRejects(t *testing.T, open Opener) {
	s := open(t, Config{Now: clock(), NewID: ids(""), Categories: []memory.Category{{Name: "rule", Label: "Rules"}}})
	add(t, s, memory.NewMemory{Category: "rule", Content: "Keep."})
	cases := []struct {
		n   memory.NewMemory
		ok  func(error) bool
		why string
	}{
		{memory.NewMemory{Category: "rule", Content: " \n\t "}, func(e error) bool { return errors.Is(e, memory.ErrEmptyContent) }, "empty"},
		{memory.NewMemory{Category: "rule", Content: strings.Repeat("word ", memory.MaxContentBytes/5+10)}, func(e error) bool {
			var tl *memory.ContentTooLongError
			return errors.As(e, &tl)
		}, "too long"},
		{memory.NewMemory{Category: "global_rule", Content: "x"}, func(e error) bool {
			var uc *memory.UnknownCategoryError
			return errors.As(e, &uc)
		}, "unknown category"},
	}
	for _, c := range cases {
		// Each bad memory comes second in its batch: nothing of the batch
		// may be written.
		_, err := s.Add(ctx, memory.NewMemory{Category: "rule", Content: "First of a batch."}, c.n)
		if err == nil || !c.ok(err) {
			t.Errorf("%s: err = %v", c.why, err)
		}
	}
	want(t, "after refused adds", list(t, s, all), "Keep.")
}

func testSupersede(t *testing.T, open Opener) {
	s := std(open, t)
	old := add(t, s, memory.NewMemory{Category: "global_rule", Content: "Respond in French."})
	nw := add(t, s, memory.NewMemory{Category: "global_rule", Content: "Respond in German.", Supersedes: old.ID})
	want(t, "active", list(t, s, memory.Query{}), "Respond in German.")
	got := list(t, s, memory.Query{All: true})
	if len(got) != 2 || got[1].ID != old.ID || got[1].SupersededBy != nw.ID || got[0].SupersededBy != "" {
		t.Errorf("with All: %+v", got)
	}
	_, err := s.Add(ctx, memory.NewMemory{Category: "global_rule", Content: "Respond in Dutch.", Supersedes: old.ID})
	if err == nil || !strings.Contains(err.Error(), "already superseded") {
		t.Errorf("superseding a superseded memory: err = %v", err)
	}
	_, err = s.Add(ctx,
		memory.NewMemory{Category: "global_rule", Content: "First of a batch."},
		memory.NewMemory{Category: "global_rule", Content: "Respond in Dutch.", Supersedes: "m_nosuchmemory"})
	if !errors.Is(err, memory.ErrNotFound) || !strings.Contains(err.Error(), "m_nosuchmemory") {
		t.Errorf("unknown supersedes: err = %v", err)
	}
	if n := len(list(t, s, all)); n != 2 {
		t.Errorf("%d memories after refused supersedes, want 2 (nothing written)", n)
	}
	// Within one batch, a later memory may supersede an earlier one.
	q := &idQueue{}
	s2 := open(t, Config{Now: clock(), NewID: q.id})
	q.next("draft", "final")
	if _, err := s2.Add(ctx,
		memory.NewMemory{Category: "personal_fact", Content: "Draft."},
		memory.NewMemory{Category: "personal_fact", Content: "Final.", Supersedes: "draft"}); err != nil {
		t.Fatal(err)
	}
	want(t, "after in-batch supersede", list(t, s, memory.Query{}), "Final. | Respond in German.")
}

func testCycles(t *testing.T, open Opener) {
	// The id source is the test's, so it can name the id a memory is about
	// to get.
	q := &idQueue{}
	s := open(t, Config{Now: clock(), NewID: q.id})
	add(t, s, memory.NewMemory{Category: "global_rule", Content: "One."}) // m1
	// Self: "self" superseding "self".
	q.next("self")
	_, err := s.Add(ctx, memory.NewMemory{Category: "global_rule", Content: "Two.", Supersedes: "self"})
	if !errors.Is(err, memory.ErrCycle) {
		t.Errorf("a memory superseding itself: err = %v", err)
	}
	// Two in one batch naming each other.
	q.next("p", "q")
	_, err = s.Add(ctx,
		memory.NewMemory{Category: "global_rule", Content: "Three.", Supersedes: "q"},
		memory.NewMemory{Category: "global_rule", Content: "Four.", Supersedes: "p"})
	if !errors.Is(err, memory.ErrCycle) {
		t.Errorf("two memories superseding each other: err = %v", err)
	}
	all := list(t, s, all)
	want(t, "after refused loops", all, "One.")
	if all[0].SupersededBy != "" {
		t.Errorf("m1 changed: %+v", all[0])
	}
}

func testScope(t *testing.T, open Opener) {
	s := std(open, t)
	rule := add(t, s, memory.NewMemory{Category: "global_rule", Content: "Answer in French."})     // m1
	alex := add(t, s, memory.NewMemory{Category: "personal_fact", Content: "Alex.", User: "alex"}) // m2
	bob := add(t, s, memory.NewMemory{Category: "personal_fact", Content: "Bob.", User: "bob"})    // m3
	refused := []memory.NewMemory{
		{Category: "global_rule", Content: "Answer in English.", User: "alex", Supersedes: rule.ID}, // a user over the workspace
		{Category: "personal_fact", Content: "Not Alex.", Supersedes: alex.ID},                      // the workspace over a user
		{Category: "personal_fact", Content: "Alex is Bob.", User: "alex", Supersedes: bob.ID},      // one user over another
	}
	for _, n := range refused {
		_, err := s.Add(ctx, n)
		var se *memory.ScopeError
		if !errors.As(err, &se) || !errors.Is(err, memory.ErrScope) {
			t.Errorf("add %+v: err = %v, want a *memory.ScopeError", n, err)
		}
	}
	want(t, "carol's view after refused supersedes", list(t, s, memory.Query{User: "carol"}), "Answer in French.")
	// The same scope may.
	en := add(t, s, memory.NewMemory{Category: "global_rule", Content: "Answer in English.", Supersedes: rule.ID})
	add(t, s, memory.NewMemory{Category: "personal_fact", Content: "Alex Martin.", User: "alex", Supersedes: alex.ID})
	want(t, "alex's view", list(t, s, memory.Query{User: "alex"}), "Alex Martin. | Answer in English.")
	want(t, "bob's view", list(t, s, memory.Query{User: "bob"}), "Answer in English. | Bob.")

	// Import keeps to the same rule, against the file and the store.
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, ms := range [][]memory.Memory{
		{{ID: "i1", Category: "global_rule", Content: "x", CreatedAt: t0, SupersededBy: "i2"}, {ID: "i2", Category: "global_rule", Content: "y", User: "u", CreatedAt: t0}},
		{{ID: "i3", Category: "personal_fact", Content: "x", User: "u", CreatedAt: t0, SupersededBy: en.ID}},
	} {
		err := s.Import(ctx, ms)
		var ie *memory.ImportError
		if !errors.As(err, &ie) || !errors.Is(err, memory.ErrScope) || ie.Index != 0 {
			t.Errorf("import across scopes: err = %v", err)
		}
	}
}

func testForget(t *testing.T, open Opener) {
	s := std(open, t)
	m := add(t, s, memory.NewMemory{Category: "personal_fact", Content: "The user is Alex."})
	add(t, s, memory.NewMemory{Category: "personal_fact", Content: "The user works at Acme."})
	if err := s.Forget(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, m.ID); err != nil {
		t.Errorf("forgetting twice: %v", err)
	}
	want(t, "active after forget", list(t, s, memory.Query{}), "The user works at Acme.")
	got := list(t, s, memory.Query{All: true})
	if len(got) != 2 || !got[1].Forgotten {
		t.Errorf("forgotten memory not listed with All: %+v", got)
	}
	if err := s.Forget(ctx, "m_nosuchmemory"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("forget unknown id: err = %v", err)
	}
	_, err := s.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: "x", Supersedes: m.ID})
	if err == nil || !strings.Contains(err.Error(), "forgotten") {
		t.Errorf("superseding a forgotten memory: err = %v", err)
	}
}

func testImport(t *testing.T, open Opener) {
	s := std(open, t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	in := []memory.Memory{
		{ID: "a", Category: "global_rule", Content: "Old rule", CreatedAt: t0, SupersededBy: "b", User: "u"},
		{ID: "b", Category: "global_rule", Content: "New rule.", CreatedAt: t0.Add(time.Hour), User: "u", Chat: "c"},
		{ID: "c", Category: "personal_fact", Content: "Gone.", CreatedAt: t0.Add(2 * time.Hour), Forgotten: true},
		{ID: "d", Category: "personal_fact", Content: "No time given."},
	}
	if err := s.Import(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := list(t, s, all)
	if len(got) != 4 {
		t.Fatalf("imported %d, want 4: %+v", len(got), got)
	}
	// d got "now" (the store's clock: 10:01), so it is newest.
	if got[0].ID != "d" || !got[0].CreatedAt.Equal(time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC)) {
		t.Errorf("memory without created_at: %+v", got[0])
	}
	if got[1].ID != "c" || !got[1].Forgotten {
		t.Errorf("forgotten import: %+v", got[1])
	}
	if b := got[2]; b.ID != "b" || b.User != "u" || b.Chat != "c" || !b.CreatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("imported: %+v", b)
	}
	if a := got[3]; a.Content != "Old rule" || a.SupersededBy != "b" {
		t.Errorf("imported: %+v", a)
	}
	bad := []struct {
		ms    []memory.Memory
		index int
		want  string
	}{
		{[]memory.Memory{{ID: "e", Category: "global_rule", Content: "x"}, {ID: "a", Category: "global_rule", Content: "y"}}, 1, "already exists"},
		{[]memory.Memory{{ID: "f", Category: "global_rule", Content: "x"}, {ID: "f", Category: "global_rule", Content: "y"}}, 1, "twice"},
		{[]memory.Memory{{ID: "g", Category: "hobby", Content: "x"}}, 0, "unknown memory category"},
		{[]memory.Memory{{ID: "h", Category: "global_rule", Content: "x"}, {ID: "i", Category: "global_rule", Content: ""}}, 1, "empty"},
		{[]memory.Memory{{Category: "global_rule", Content: "x"}}, 0, "missing id"},
		{[]memory.Memory{{ID: "j", Category: "global_rule", Content: "x"}, {ID: "k", Category: "global_rule", Content: "x", SupersededBy: "zz"}}, 1, `superseded_by "zz"`},
	}
	for _, b := range bad {
		err := s.Import(ctx, b.ms)
		var ie *memory.ImportError
		if !errors.As(err, &ie) || ie.Index != b.index || !strings.Contains(err.Error(), b.want) {
			t.Errorf("import %+v: err = %v (%#v), want an ImportError at %d mentioning %q", b.ms, err, ie, b.index, b.want)
		}
	}
	if n := len(list(t, s, all)); n != 4 {
		t.Errorf("%d memories after refused imports, want 4: an import is all or nothing", n)
	}
	// A memory of a later import may supersede a stored one of its scope.
	if err := s.Import(ctx, []memory.Memory{{ID: "l", Category: "personal_fact", Content: "z", CreatedAt: t0, SupersededBy: "d"}}); err != nil {
		t.Errorf("import superseded by a stored memory: %v", err)
	}
}

func testImportTimes(t *testing.T, open Opener) {
	s := std(open, t)
	times := []time.Time{
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1677, 9, 21, 0, 12, 43, 145224191, time.UTC), // just before int64 nanoseconds begin
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2262, 4, 11, 23, 47, 16, 854775808, time.UTC), // just after they end
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),                // (the zero time itself means "no time": now)
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("", 5*3600+30*60)), // an offset: kept as the same instant
	}
	var in []memory.Memory
	for i, tm := range times {
		in = append(in, memory.Memory{ID: fmt.Sprintf("t%d", i), Category: "personal_fact", Content: fmt.Sprintf("Time %d.", i), CreatedAt: tm})
	}
	if err := s.Import(ctx, in); err != nil {
		t.Fatal(err)
	}
	byID := map[string]time.Time{}
	for _, m := range list(t, s, all) {
		byID[m.ID] = m.CreatedAt
	}
	for i, tm := range times {
		got := byID[fmt.Sprintf("t%d", i)]
		if !got.Equal(tm) || got.Location() != time.UTC {
			t.Errorf("created_at %s came back as %s", tm.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano))
		}
	}
	// The order follows the times, across 1970 and the old nanosecond limits.
	got := list(t, s, all)
	for i := 1; i < len(got); i++ {
		if got[i].CreatedAt.After(got[i-1].CreatedAt) {
			t.Errorf("not newest first: %s before %s", got[i-1].CreatedAt, got[i].CreatedAt)
		}
	}
	for _, tm := range []time.Time{time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		err := s.Import(ctx, []memory.Memory{{ID: "ok", Category: "personal_fact", Content: "x"}, {ID: "far", Category: "personal_fact", Content: "x", CreatedAt: tm}})
		var ie *memory.ImportError
		if !errors.As(err, &ie) || ie.Index != 1 || !strings.Contains(err.Error(), "0000–9999") {
			t.Errorf("created_at %v: err = %v", tm, err)
		}
	}
	if n := len(list(t, s, all)); n != len(times) {
		t.Errorf("%d memories after refused imports, want %d", n, len(times))
	}
}

func testImportCycles(t *testing.T, open Opener) {
	s := std(open, t)
	add(t, s, memory.NewMemory{Category: "global_rule", Content: "Stored."}) // m1
	mk := func(id, by string) memory.Memory {
		return memory.Memory{ID: id, Category: "global_rule", Content: "Rule " + id + ".", SupersededBy: by}
	}
	cases := []struct {
		name  string
		ms    []memory.Memory
		index int
	}{
		{"self", []memory.Memory{mk("a", ""), mk("b", "b")}, 1},
		{"two", []memory.Memory{mk("a", "b"), mk("b", "a")}, 0},
		{"three", []memory.Memory{mk("x", ""), mk("a", "b"), mk("b", "c"), mk("c", "a")}, 1},
		{"tail into a loop", []memory.Memory{mk("t", "a"), mk("a", "b"), mk("b", "a")}, 1},
	}
	for _, c := range cases {
		err := s.Import(ctx, c.ms)
		var ie *memory.ImportError
		if !errors.As(err, &ie) || !errors.Is(err, memory.ErrCycle) || ie.Index != c.index {
			t.Errorf("%s: err = %v (%#v), want a cycle at index %d", c.name, err, ie, c.index)
		}
	}
	want(t, "after refused loops", list(t, s, all), "Stored.")
	// A chain that ends is fine, also into a stored memory.
	if err := s.Import(ctx, []memory.Memory{mk("a", "b"), mk("b", "c"), mk("c", "m1")}); err != nil {
		t.Errorf("a chain: %v", err)
	}
}

func testExportOrder(t *testing.T, open Opener) {
	// A frozen clock: every memory has the same created_at, and insertion
	// order breaks the tie, for adds and for an import alike.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := open(t, Config{Now: func() time.Time { return t0 }, NewID: ids("")})
	for i := range 3 {
		add(t, s, memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("N%d.", i)})
	}
	var in []memory.Memory
	for i := 3; i < 6; i++ {
		in = append(in, memory.Memory{ID: fmt.Sprintf("i%d", i), Category: "personal_fact", Content: fmt.Sprintf("N%d.", i), CreatedAt: t0})
	}
	if err := s.Import(ctx, in); err != nil {
		t.Fatal(err)
	}
	want(t, "same time, newest first", list(t, s, all), "N5. | N4. | N3. | N2. | N1. | N0.")
}

// testConcurrent runs writers on several handles at once (as processes or
// replicas would): each adds memories of its own user and supersedes its
// own previous one. Every acknowledged add is stored once, and each
// writer's chain is whole.
func testConcurrent(t *testing.T, open Opener) {
	const handles, writers, each = 3, 4, 15
	var stores []memory.Store
	for h := range handles {
		stores = append(stores, open(t, Config{Now: time.Now, NewID: ids(fmt.Sprintf("h%d", h))}))
	}
	var wg sync.WaitGroup
	acked := make([][]string, handles*writers)
	errs := make(chan error, handles*writers)
	for h := range handles {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := h*writers + w
				user := fmt.Sprintf("u%d", k)
				prev := ""
				for i := range each {
					ms, err := stores[h].Add(ctx, memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("%s fact %d", user, i), User: user, Supersedes: prev})
					if err != nil {
						errs <- fmt.Errorf("%s add %d: %w", user, i, err)
						return
					}
					prev = ms[0].ID
					acked[k] = append(acked[k], prev)
					if i%5 == 4 {
						if _, err := stores[(h+1)%handles].List(ctx, memory.Query{User: user}); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := list(t, stores[0], all)
	byID := map[string]memory.Memory{}
	for _, m := range got {
		if _, dup := byID[m.ID]; dup {
			t.Errorf("%s listed twice", m.ID)
		}
		byID[m.ID] = m
	}
	if len(got) != handles*writers*each {
		t.Errorf("%d memories, want %d", len(got), handles*writers*each)
	}
	for k, chain := range acked {
		for i, id := range chain {
			m, ok := byID[id]
			switch {
			case !ok:
				t.Errorf("acknowledged %s is missing", id)
			case i < len(chain)-1 && m.SupersededBy != chain[i+1]:
				t.Errorf("u%d: %s superseded by %q, want %s", k, id, m.SupersededBy, chain[i+1])
			case i == len(chain)-1 && m.SupersededBy != "":
				t.Errorf("u%d: last %s superseded by %q", k, id, m.SupersededBy)
			}
		}
		act := list(t, stores[k%handles], memory.Query{User: fmt.Sprintf("u%d", k)})
		if len(act) != 1 || act[0].ID != chain[len(chain)-1] {
			t.Errorf("u%d active = %+v, want only %s", k, act, chain[len(chain)-1])
		}
	}
}

// testRacingSupersedes has writers on several handles supersede the same
// memory at once: exactly one wins, every other is refused as already
// superseded, and nothing else is written.
func testRacingSupersedes(t *testing.T, open Opener) {
	const handles, writers = 3, 4
	var stores []memory.Store
	for h := range handles {
		stores = append(stores, open(t, Config{Now: time.Now, NewID: ids(fmt.Sprintf("h%d", h))}))
	}
	old := add(t, stores[0], memory.NewMemory{Category: "global_rule", Content: "The rule to replace."})
	var wg sync.WaitGroup
	var won, refused atomic.Int32
	for h := range handles {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := stores[h].Add(ctx, memory.NewMemory{Category: "global_rule", Content: fmt.Sprintf("Replacement %d-%d.", h, w), Supersedes: old.ID})
				switch {
				case err == nil:
					won.Add(1)
				case strings.Contains(err.Error(), "already superseded"):
					refused.Add(1)
				default:
					t.Errorf("racing supersede: %v", err)
				}
			}()
		}
	}
	wg.Wait()
	if won.Load() != 1 || refused.Load() != handles*writers-1 {
		t.Errorf("%d won, %d refused; want 1 and %d", won.Load(), refused.Load(), handles*writers-1)
	}
	if n := len(list(t, stores[1], all)); n != 2 {
		t.Errorf("%d memories, want the old one and one replacement", n)
	}
	if n := len(list(t, stores[2], memory.Query{})); n != 1 {
		t.Errorf("%d active, want 1", n)
	}
}
