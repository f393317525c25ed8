package memory

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Search implements [Searcher] with the full-text index kept beside the
// memories (migration 4): BM25 over the stemmed words of content and
// category, newer first among equal scores.
//
// The index ranks first, on its own, the best matches of every scope, and
// only those are looked up and filtered by scope: the hits of q's scope
// among the index's top N are the top of that scope's ranking. When they
// are fewer than the limit, the search runs again without the cut.
func (s *SQLite) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	terms, err := s.selective(ctx, Terms(q.Text))
	if err != nil {
		return nil, s.dbErr(err)
	}
	if len(terms) == 0 {
		return nil, nil
	}
	match := ftsQuery(terms)
	limit := q.limit()
	first := max(50, 4*limit)
	hits, err := s.search(ctx, match, q.User, first, limit)
	if err == nil && len(hits) < limit {
		hits, err = s.search(ctx, match, q.User, -1, limit)
	}
	if err != nil {
		return nil, s.dbErr(err)
	}
	return hits, nil
}

// Bounds on the work of one search. BM25 costs the index a few
// microseconds for each memory that matches any term, so a search looks
// for its rarest terms only: as many, up to maxRankedTerms, as match at
// most maxRankedRows memories together (always the rarest one). A term in
// that many memories says little about any of them.
const (
	maxRankedTerms = 12
	maxRankedRows  = 3000
)

// selective returns the terms a search ranks by: terms ordered by how
// many memories each matches (counted up to maxRankedRows, in the index,
// stemmed as the index stems), rarest first, kept while their matches add
// up to at most maxRankedRows. A term that matches nothing is dropped.
func (s *SQLite) selective(ctx context.Context, terms []string) ([]string, error) {
	type counted struct {
		term string
		n    int
	}
	if len(terms) == 0 {
		return nil, nil
	}
	// One statement counts every term: a statement each cost more in
	// preparing than in counting.
	subs := make([]string, len(terms))
	args := make([]any, 0, len(terms)+1)
	args = append(args, maxRankedRows+1)
	n := make([]int, len(terms))
	dest := make([]any, len(terms))
	for i, t := range terms {
		subs[i] = `(SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?` + strconv.Itoa(i+2) + ` LIMIT ?1))`
		args = append(args, ftsQuery([]string{t}))
		dest[i] = &n[i]
	}
	err := s.retry(ctx, func() error {
		return s.db.QueryRowContext(ctx, `SELECT `+strings.Join(subs, `, `), args...).Scan(dest...)
	})
	if err != nil {
		return nil, err
	}
	cs := make([]counted, 0, len(terms))
	for i, t := range terms {
		if n[i] > 0 {
			cs = append(cs, counted{t, n[i]})
		}
	}
	slices.SortStableFunc(cs, func(a, b counted) int { return a.n - b.n })
	var out []string
	rows := 0
	for _, c := range cs {
		if len(out) == maxRankedTerms || (len(out) > 0 && rows+c.n > maxRankedRows) {
			break
		}
		out = append(out, c.term)
		rows += c.n
	}
	return out, nil
}

// search returns the best limit active hits of user's scope among the
// index's best first matches (all of them when first < 0).
func (s *SQLite) search(ctx context.Context, match, user string, first, limit int) ([]Hit, error) {
	scope := `m.user = ''`
	args := []any{match, first}
	if user != "" {
		scope = `m.user IN ('', ?)`
		args = append(args, user)
	}
	args = append(args, limit)
	// The words that matched come from the index's highlight of each
	// ranked row's content, stemming included.
	query := `WITH ranked AS MATERIALIZED (
		SELECT rowid, rank, highlight(memories_fts, 0, '` + markOpen + `', '` + markClose + `') AS marked
		FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?)
	SELECT m.seq, m.id, m.category, m.content, m.user, m.chat, m.created_s, m.created_ns, -ranked.rank, ranked.marked
	FROM ranked JOIN memories m ON m.seq = ranked.rowid
	WHERE m.superseded_by = '' AND m.forgotten = 0 AND ` + scope + `
	ORDER BY ranked.rank, m.created_s DESC, m.created_ns DESC, m.seq DESC
	LIMIT ?`
	var hits []Hit
	err := s.retry(ctx, func() error {
		hits = hits[:0]
		rows, err := s.db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h Hit
			var seq, sec, nsec int64
			var text string
			if err := rows.Scan(&seq, &h.ID, &h.Category, &h.Content, &h.User, &h.Chat, &sec, &nsec, &h.Score, &text); err != nil {
				return err
			}
			if !strings.ContainsAny(h.Content, markOpen+markClose) {
				h.Matched = marked(text)
			}
			h.CreatedAt = time.Unix(sec, nsec).UTC()
			h.seq = seq
			hits = append(hits, h)
		}
		return rows.Err()
	})
	return hits, err
}
