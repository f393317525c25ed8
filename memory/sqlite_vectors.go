package memory

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

var _ VectorStore = (*SQLite)(nil)

// Unembedded implements [VectorStore]; Key is the memory's seq.
func (s *SQLite) Unembedded(ctx context.Context, model string, after int64, limit int) ([]Unembedded, error) {
	var out []Unembedded
	err := s.retry(ctx, func() error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, `SELECT m.seq, m.content FROM memories m
			WHERE m.seq > ? AND m.superseded_by = '' AND m.forgotten = 0
				AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq AND v.model = ?)
			ORDER BY m.seq LIMIT ?`, after, model, max(limit, 1))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var u Unembedded
			if err := rows.Scan(&u.Key, &u.Content); err != nil {
				return err
			}
			out = append(out, u)
		}
		return rows.Err()
	})
	return out, s.dbErr(err)
}

// PutVectors implements [VectorStore], in one transaction.
func (s *SQLite) PutVectors(ctx context.Context, model string, vs []Vector) error {
	for _, v := range vs {
		if err := CheckVector(v.Values); err != nil {
			return fmt.Errorf("memory %d: %w", v.Key, err)
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err := s.retry(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		st, err := tx.PrepareContext(ctx, `INSERT INTO memory_vectors (seq, model, user, vec)
			SELECT seq, ?, user, ? FROM memories WHERE seq = ?
			ON CONFLICT (seq, model) DO NOTHING`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, v := range vs {
			if _, err := st.ExecContext(ctx, model, EncodeVector(v.Values), v.Key); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	return s.dbErr(err)
}

// vectorCache is the store's copy of one model's vectors, scaled to
// length 1, so that a search reads from the database only the vectors
// written since the last one, and then the rows of its best hits.
//
// Key: the model. Invalidated: by a vector removed (the vector_removals
// counter moved) or another model asked for; vectors added since are read
// on the next search (their ids grow past lastID).
type vectorCache struct {
	mu       sync.Mutex
	model    string
	removals int64
	lastID   int64
	rows     []cachedVector // appended to only: a copy of the slice stays valid
}

type cachedVector struct {
	seq  int64
	user string
	unit []float32
}

// current returns the cache's vectors for model, brought up to date.
func (c *vectorCache) current(ctx context.Context, db *sql.DB, model string) ([]cachedVector, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var removals, lastID int64
	if err := db.QueryRowContext(ctx, `SELECT (SELECT n FROM vector_removals), (SELECT coalesce(max(id), 0) FROM memory_vectors)`).Scan(&removals, &lastID); err != nil {
		return nil, err
	}
	if model != c.model || removals != c.removals || lastID < c.lastID {
		c.model, c.removals, c.lastID, c.rows = model, removals, 0, nil
	}
	if lastID == c.lastID {
		return c.rows, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT id, seq, user, vec FROM memory_vectors WHERE model = ? AND id > ? AND id <= ? ORDER BY id`, model, c.lastID, lastID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	added := c.rows
	for rows.Next() {
		var id int64
		var cv cachedVector
		var blob []byte
		if err := rows.Scan(&id, &cv.seq, &cv.user, &blob); err != nil {
			return nil, err
		}
		v, err := DecodeVector(blob)
		if err != nil {
			return nil, fmt.Errorf("vector of memory %d: %w", cv.seq, err)
		}
		if cv.unit = unit(v); cv.unit != nil {
			added = append(added, cv)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	c.rows, c.lastID = added, lastID
	return c.rows, nil
}

// Nearest implements [VectorStore] by exact cosine in Go over the scope's
// vectors (kept in memory between searches, see vectorCache); the rows
// of the best ones are then read, and those no longer active passed over.
func (s *SQLite) Nearest(ctx context.Context, q VectorQuery) ([]Hit, error) {
	qv := unit(q.Vector)
	if qv == nil {
		return nil, fmt.Errorf("%w: the query vector has no direction", ErrBadVector)
	}
	var hits []Hit
	err := s.retry(ctx, func() error {
		all, err := s.vectors.current(ctx, s.db, q.Model)
		if err != nil {
			return err
		}
		type scored struct {
			score float64
			seq   int64
		}
		cand := make([]scored, 0, len(all))
		for _, v := range all {
			if (v.user == "" || v.user == q.User) && len(v.unit) == len(qv) {
				cand = append(cand, scored{dot(v.unit, qv), v.seq})
			}
		}
		slices.SortFunc(cand, func(a, b scored) int {
			if a.score != b.score {
				if a.score > b.score {
					return -1
				}
				return 1
			}
			return cmp.Compare(b.seq, a.seq)
		})
		hits = hits[:0]
		limit := q.limit()
		// Rows are read a chunk at a time, best first; a chunk ends
		// past a tie, so that equal scores are ordered among themselves
		// by recency, as compareHits orders them.
		for i := 0; i < len(cand) && len(hits) < limit; {
			j := min(i+limit-len(hits)+8, len(cand))
			for j < len(cand) && cand[j].score == cand[j-1].score {
				j++
			}
			scores := make(map[int64]float64, j-i)
			keys := make([]any, 0, j-i)
			for _, c := range cand[i:j] {
				scores[c.seq] = c.score
				keys = append(keys, c.seq)
			}
			found, err := s.activeRows(ctx, keys)
			if err != nil {
				return err
			}
			for _, h := range found {
				h.Score = scores[h.seq]
				hits = append(hits, h)
			}
			i = j
		}
		slices.SortStableFunc(hits, compareHits)
		hits = hits[:min(limit, len(hits))]
		return nil
	})
	if err != nil {
		return nil, s.dbErr(err)
	}
	return hits, nil
}

// activeRows reads the active memories among the rows seqs.
func (s *SQLite) activeRows(ctx context.Context, seqs []any) ([]Hit, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, id, category, content, user, chat, created_s, created_ns FROM memories
		WHERE seq IN (?`+strings.Repeat(`, ?`, len(seqs)-1)+`) AND superseded_by = '' AND forgotten = 0`, seqs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Hit
	for rows.Next() {
		var h Hit
		var sec, nsec int64
		if err := rows.Scan(&h.seq, &h.ID, &h.Category, &h.Content, &h.User, &h.Chat, &sec, &nsec); err != nil {
			return nil, err
		}
		h.CreatedAt = time.Unix(sec, nsec).UTC()
		out = append(out, h)
	}
	return out, rows.Err()
}

// nearestPlain is Nearest by [NearestPlain] over every vector of the
// model read from the database: the reference the tests hold Nearest to.
func (s *SQLite) nearestPlain(ctx context.Context, q VectorQuery) ([]Hit, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT m.seq, m.id, m.category, m.content, m.user, m.chat, m.created_s, m.created_ns,
			m.superseded_by, m.forgotten, v.vec
		FROM memory_vectors v JOIN memories m ON m.seq = v.seq WHERE v.model = ?`, q.Model)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cs []Candidate
	for rows.Next() {
		var c Candidate
		var sec, nsec int64
		var blob []byte
		if err := rows.Scan(&c.Key, &c.ID, &c.Category, &c.Content, &c.User, &c.Chat, &sec, &nsec, &c.SupersededBy, &c.Forgotten, &blob); err != nil {
			return nil, err
		}
		c.CreatedAt = time.Unix(sec, nsec).UTC()
		if c.Vector, err = DecodeVector(blob); err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return NearestPlain(q, cs), nil
}
