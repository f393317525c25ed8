package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/loomctx/loom/memory"
)

var _ memory.Searcher = (*Memories)(nil)

// The words ts_headline marks as matched are put between these two
// private-use characters; a hit whose content holds either gets no
// Matched words.
const markOpen, markClose = "\ue000", "\ue001"

// rankWeights weigh a match in the category (D) a quarter of one in the
// content (A), as the SQLite store does; B and C are unused.
const rankWeights = `'{0.25, 0.25, 0.25, 1.0}'`

// Search implements [memory.Searcher] with PostgreSQL's full-text search
// (migration 5): ts_rank over the english configuration's stems, newer
// first among equal ranks. The query is the terms of q.Text (see
// [memory.Terms]) joined by OR; each term holds only letters and digits,
// so none is read as tsquery syntax.
func (s *Memories) Search(ctx context.Context, q memory.SearchQuery) ([]memory.Hit, error) {
	terms := memory.Terms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = memory.DefaultSearchLimit
	case limit > memory.MaxSearchLimit:
		limit = memory.MaxSearchLimit
	}
	scope := `user_id = ''`
	args := []any{s.workspace, strings.Join(terms, " | "), limit}
	if q.User != "" {
		args = append(args, q.User)
		scope = `user_id IN ('', $4)`
	}
	query := `WITH q AS (SELECT to_tsquery('english', $2) AS q),
	hits AS (
		SELECT id, category, content, user_id, chat, created_s, created_ns, seq, ts_rank(` + rankWeights + `, search, q.q) AS score, q.q AS tsq
		FROM loom_memories, q
		WHERE workspace = $1 AND superseded_by = '' AND NOT forgotten AND ` + scope + ` AND search @@ q.q
		ORDER BY score DESC, created_s DESC, created_ns DESC, seq DESC
		LIMIT $3)
	SELECT id, category, content, user_id, chat, created_s, created_ns, score,
		ts_headline('english', content, tsq, 'StartSel=` + markOpen + `, StopSel=` + markClose + `, HighlightAll=true')
	FROM hits ORDER BY score DESC, created_s DESC, created_ns DESC, seq DESC`
	rows, err := s.db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	defer rows.Close()
	var hits []memory.Hit
	for rows.Next() {
		var h memory.Hit
		var sec int64
		var nsec int32
		var score float32
		var headline string
		if err := rows.Scan(&h.ID, &h.Category, &h.Content, &h.User, &h.Chat, &sec, &nsec, &score, &headline); err != nil {
			return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
		}
		h.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
		h.Score = float64(score)
		if !strings.ContainsAny(h.Content, markOpen+markClose) {
			h.Matched = memory.MarkedWords(headline, markOpen, markClose)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	return hits, nil
}
