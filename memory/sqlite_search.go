package memory

import (
	"context"
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
	terms := Terms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	match := ftsQuery(terms)
	limit := q.limit()
	first := max(200, 8*limit)
	hits, err := s.search(ctx, match, q.User, first, limit)
	if err == nil && len(hits) < limit {
		hits, err = s.search(ctx, match, q.User, -1, limit)
	}
	if err != nil {
		return nil, s.dbErr(err)
	}
	if err := s.matched(ctx, match, hits); err != nil {
		return nil, s.dbErr(err)
	}
	return hits, nil
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
	query := `WITH ranked AS MATERIALIZED (
		SELECT rowid, rank FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?)
	SELECT m.seq, m.id, m.category, m.content, m.user, m.chat, m.created_s, m.created_ns, -ranked.rank
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
			if err := rows.Scan(&seq, &h.ID, &h.Category, &h.Content, &h.User, &h.Chat, &sec, &nsec, &h.Score); err != nil {
				return err
			}
			h.CreatedAt = time.Unix(sec, nsec).UTC()
			h.seq = seq
			hits = append(hits, h)
		}
		return rows.Err()
	})
	return hits, err
}

// matched fills each hit's Matched words from the index's highlight of
// its content: the words the query's terms matched, stemming included.
func (s *SQLite) matched(ctx context.Context, match string, hits []Hit) error {
	if len(hits) == 0 {
		return nil
	}
	byRow := make(map[int64]*Hit, len(hits))
	seqs := make([]string, len(hits))
	for i := range hits {
		byRow[hits[i].seq] = &hits[i]
		seqs[i] = strconv.FormatInt(hits[i].seq, 10)
	}
	query := `SELECT rowid, highlight(memories_fts, 0, ?, ?) FROM memories_fts
		WHERE memories_fts MATCH ? AND rowid IN (` + strings.Join(seqs, ",") + `)`
	return s.retry(ctx, func() error {
		rows, err := s.db.QueryContext(ctx, query, markOpen, markClose, match)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			var text string
			if err := rows.Scan(&seq, &text); err != nil {
				return err
			}
			h := byRow[seq]
			if h == nil || strings.ContainsAny(h.Content, markOpen+markClose) {
				continue
			}
			h.Matched = marked(text)
		}
		return rows.Err()
	})
}
