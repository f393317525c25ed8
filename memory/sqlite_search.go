package memory

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"
)

// Search implements [Searcher] with the full-text index kept beside the
// memories (migration 4): BM25 over the stemmed words of content and
// category, newer first among equal scores.
//
// The work is bounded by the rows ranked, not by the store's size: the
// query keeps its rarest terms (see selective), FTS5 ranks their matches,
// and the ranked rows are read best first, each joined to its memory and
// kept when it is active and in scope, until the limit is reached and the
// score drops.
func (s *SQLite) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	st, err := s.searchStatements(ctx)
	if err != nil {
		return nil, s.dbErr(err)
	}
	var hits []Hit
	err = s.retry(ctx, func() error {
		terms, from, err := st.selective(ctx, Terms(q.Text))
		if err != nil || len(terms) == 0 {
			hits = nil
			return err
		}
		hits, err = st.rank(ctx, ftsQuery(terms), from, q.User, q.limit())
		return err
	})
	if err != nil {
		return nil, s.dbErr(err)
	}
	return hits, nil
}

// Bounds on the work of one search. BM25 costs the index a few
// microseconds for each memory that matches any term (more in a large
// file), so a search looks for its rarest terms only: as many, up to
// maxRankedTerms, as match at most maxRankedRows memories together. A
// term in that many memories says little about any of them. In
// bench/retrieval (6,000 memories) 1,000 rows kept the recall of 3,000;
// 300 lost a tenth of it.
const (
	maxRankedTerms = 12
	maxRankedRows  = 1000
)

// searchStmts are the prepared statements of Search: preparing a query on
// the full-text index costs about as much as running it on a small store.
type searchStmts struct {
	count, newest, ranked *sql.Stmt
}

const (
	// countSQL counts a term's matches, up to a bound.
	countSQL = `SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?1 LIMIT ?2)`
	// newestSQL is the row of a term's n-th most recently written match.
	newestSQL = `SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2`
	// rankSQL reads the matches from row ?2 on, best first: FTS5 ranks
	// them all itself (ORDER BY rank is its own), and each row read is
	// joined to its memory by key. The highlight, which reads and
	// tokenizes the content, is made only for the rows read and kept.
	rankSQL = `SELECT m.seq, m.id, m.category, m.content, m.user, m.chat, m.created_s, m.created_ns, -f.rank,
		highlight(memories_fts, 0, '` + markOpen + `', '` + markClose + `')
	FROM memories_fts f JOIN memories m ON m.seq = f.rowid
	WHERE memories_fts MATCH ?1 AND f.rowid >= ?2
		AND m.superseded_by = '' AND m.forgotten = 0 AND m.user IN ('', ?3)
	ORDER BY f.rank`
)

// searchMmap is how much of the database file Search's connections map
// into memory instead of reading it page by page through SQLite's small
// page cache: in a store of 1,000,000 memories (340 MB) that halved a
// search's time, as ranking visits pages all over the index. Only the
// search connections map the file: the pages an export or import reads
// would otherwise count in the process's resident size. Mapped pages are
// the kernel's file cache, shared and dropped under memory pressure.
const searchMmap = 1 << 30

// searchStatements returns Search's prepared statements, on connections
// of their own (see searchMmap), opening them on first use.
func (s *SQLite) searchStatements(ctx context.Context) (*searchStmts, error) {
	s.searchMu.Lock()
	defer s.searchMu.Unlock()
	if s.searchSt != nil {
		return s.searchSt, nil
	}
	if s.closed {
		return nil, errors.New("the memory store is closed")
	}
	if s.searchDB == nil {
		db, err := sql.Open("sqlite", s.searchDSN)
		if err != nil {
			return nil, err
		}
		s.searchDB = db
	}
	var st searchStmts
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{{&st.count, countSQL}, {&st.newest, newestSQL}, {&st.ranked, rankSQL}} {
		var err error
		if *p.dst, err = s.searchDB.PrepareContext(ctx, p.sql); err != nil {
			st.close()
			return nil, err
		}
	}
	s.searchSt = &st
	return s.searchSt, nil
}

func (st *searchStmts) close() {
	for _, x := range []*sql.Stmt{st.count, st.newest, st.ranked} {
		if x != nil {
			x.Close()
		}
	}
}

// selective returns the terms a search ranks by: terms ordered by how
// many memories each matches (counted up to maxRankedRows, in the index,
// stemmed as the index stems), rarest first, kept while their matches add
// up to at most maxRankedRows. A term that matches nothing is dropped.
// When even the rarest term matches more, it alone is kept, and from is
// the row from which on its maxRankedRows most recently written matches
// lie: only those are ranked. Otherwise from is 0.
func (st *searchStmts) selective(ctx context.Context, terms []string) (kept []string, from int64, err error) {
	type counted struct {
		term string
		n    int
	}
	cs := make([]counted, 0, len(terms))
	for _, t := range terms {
		var n int
		if err := st.count.QueryRowContext(ctx, ftsQuery([]string{t}), maxRankedRows+1).Scan(&n); err != nil {
			return nil, 0, err
		}
		if n > 0 {
			cs = append(cs, counted{t, n})
		}
	}
	if len(cs) == 0 {
		return nil, 0, nil
	}
	slices.SortStableFunc(cs, func(a, b counted) int { return a.n - b.n })
	if cs[0].n > maxRankedRows {
		kept = []string{cs[0].term}
		err := st.newest.QueryRowContext(ctx, ftsQuery(kept), maxRankedRows-1).Scan(&from)
		return kept, from, err
	}
	rows := 0
	for _, c := range cs {
		if len(kept) == maxRankedTerms || rows+c.n > maxRankedRows {
			break
		}
		kept = append(kept, c.term)
		rows += c.n
	}
	return kept, 0, nil
}

// rank returns the best limit active hits of user's scope for match among
// the rows from from on; equal scores put the newer memory first.
func (st *searchStmts) rank(ctx context.Context, match string, from int64, user string, limit int) ([]Hit, error) {
	rows, err := st.ranked.QueryContext(ctx, match, from, user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		var sec, nsec int64
		var text string
		if err := rows.Scan(&h.seq, &h.ID, &h.Category, &h.Content, &h.User, &h.Chat, &sec, &nsec, &h.Score, &text); err != nil {
			return nil, err
		}
		// Rows come best first: once the limit is reached, only rows
		// tied with the last one kept can still belong, by recency.
		if len(hits) >= limit && h.Score < hits[len(hits)-1].Score {
			break
		}
		if !strings.ContainsAny(h.Content, markOpen+markClose) {
			h.Matched = marked(text)
		}
		h.CreatedAt = time.Unix(sec, nsec).UTC()
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(hits, compareHits)
	return hits[:min(limit, len(hits))], nil
}

// compareHits orders hits best first: higher score, then newer, then
// later written.
func compareHits(a, b Hit) int {
	switch {
	case a.Score != b.Score:
		if a.Score > b.Score {
			return -1
		}
		return 1
	case !a.CreatedAt.Equal(b.CreatedAt):
		return b.CreatedAt.Compare(a.CreatedAt)
	}
	return cmp.Compare(b.seq, a.seq)
}

// optimizeAfterImport merges the full-text index into one segment after
// an import of n memories into a store whose rows so far were numbered up
// to lastSeq, when the import is at least a sixteenth of the store. A
// bulk insert leaves the index in several segments, and every term a
// search looks up is looked up in each of them: at 1,000,000 memories
// imported 100,000 at a time, ten segments made a search three times
// slower. Merging reads and writes the whole index (2.3 s of CPU at
// 1,000,000 memories), so only an import of a sixteenth of the store or
// more pays for it; after a smaller one FTS5's own automerge goes on.
func optimizeAfterImport(ctx context.Context, tx *sql.Tx, n int, lastSeq int64) error {
	if n == 0 || int64(n)*16 < lastSeq+int64(n) {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO memories_fts(memories_fts) VALUES ('optimize')`)
	return err
}
