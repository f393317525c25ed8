package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"
)

var _ VectorStore = (*SQLite)(nil)

// Unembedded implements [VectorStore]; Key is the memory's seq. Writers
// take turns, so a memory committed later always has a higher seq than
// the newest one read here.
func (s *SQLite) Unembedded(ctx context.Context, model string, after int64, limit int) (todo []Unembedded, last int64, err error) {
	limit = max(limit, 1)
	err = s.retry(ctx, func() error {
		todo = todo[:0]
		if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM memories`).Scan(&last); err != nil {
			return err
		}
		rows, err := s.db.QueryContext(ctx, `SELECT m.seq, m.content FROM memories m
			WHERE m.seq > ? AND m.seq <= ? AND m.superseded_by = '' AND m.forgotten = 0
				AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq AND v.model = ?)
			ORDER BY m.seq LIMIT ?`, after, last, model, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var u Unembedded
			if err := rows.Scan(&u.Key, &u.Content); err != nil {
				return err
			}
			todo = append(todo, u)
		}
		return rows.Err()
	})
	if len(todo) == limit {
		last = todo[len(todo)-1].Key
	}
	return todo, max(last, after), s.dbErr(err)
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

// vectorCache is the store's copy of one model's vectors (a VectorSet),
// so that a search reads from the database only the vectors written since
// the last one, and then the rows of its best hits.
//
// Key: the model. Invalidated: by a vector removed (the vector_removals
// counter moved) or another model asked for; vectors added since are read
// on the next search (their ids grow past lastID).
type vectorCache struct {
	mu       sync.Mutex
	model    string
	removals int64
	lastID   int64
	set      VectorSet
}

// current returns the cache's vectors for model, brought up to date.
func (c *vectorCache) current(ctx context.Context, db *sql.DB, model string) (VectorSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var removals, lastID int64
	if err := db.QueryRowContext(ctx, `SELECT (SELECT n FROM vector_removals), (SELECT coalesce(max(id), 0) FROM memory_vectors)`).Scan(&removals, &lastID); err != nil {
		return VectorSet{}, err
	}
	if model != c.model || removals != c.removals || lastID < c.lastID {
		c.model, c.removals, c.lastID, c.set = model, removals, 0, VectorSet{}
	}
	if lastID == c.lastID {
		return c.set, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT seq, user, vec FROM memory_vectors WHERE model = ? AND id > ? AND id <= ? ORDER BY id`, model, c.lastID, lastID)
	if err != nil {
		return VectorSet{}, err
	}
	defer rows.Close()
	set := c.set
	for rows.Next() {
		var seq int64
		var user string
		var blob []byte
		if err := rows.Scan(&seq, &user, &blob); err != nil {
			return VectorSet{}, err
		}
		if err := set.AddEncoded(seq, user, blob); err != nil {
			return VectorSet{}, err
		}
	}
	if err := rows.Err(); err != nil {
		return VectorSet{}, err
	}
	c.set, c.lastID = set, lastID
	return set, nil
}

// Nearest implements [VectorStore] by exact cosine in Go over the scope's
// vectors (kept in memory between searches, see vectorCache and
// [VectorSet.Nearest]).
func (s *SQLite) Nearest(ctx context.Context, q VectorQuery) ([]Hit, error) {
	if err := CheckVector(q.Vector); err != nil {
		return nil, fmt.Errorf("the query vector: %w", err)
	}
	var hits []Hit
	err := s.retry(ctx, func() error {
		set, err := s.vectors.current(ctx, s.db, q.Model)
		if err != nil {
			return err
		}
		hits, err = set.Nearest(ctx, q, s.activeRows)
		return err
	})
	if err != nil {
		return nil, s.dbErr(err)
	}
	return hits, nil
}

// activeRows reads the active memories among the rows keys.
func (s *SQLite) activeRows(ctx context.Context, keys []int64) ([]Candidate, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	rows, err := s.db.QueryContext(ctx, `SELECT seq, id, category, content, user, chat, created_s, created_ns FROM memories
		WHERE seq IN (?`+strings.Repeat(`, ?`, len(keys)-1)+`) AND superseded_by = '' AND forgotten = 0`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Candidate
	for rows.Next() {
		var c Candidate
		var sec, nsec int64
		if err := rows.Scan(&c.Key, &c.ID, &c.Category, &c.Content, &c.User, &c.Chat, &sec, &nsec); err != nil {
			return nil, err
		}
		c.CreatedAt = time.Unix(sec, nsec).UTC()
		out = append(out, c)
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
