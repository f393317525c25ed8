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

// vectorCache is the store's copy of one model's vectors, scaled to
// length 1 and laid end to end, so that a search reads from the database
// only the vectors written since the last one, and then the rows of its
// best hits.
//
// Key: the model. Invalidated: by a vector removed (the vector_removals
// counter moved) or another model asked for; vectors added since are read
// on the next search (their ids grow past lastID).
type vectorCache struct {
	mu       sync.Mutex
	model    string
	removals int64
	lastID   int64
	// dims is the length of the cached vectors (the first one's);
	// vectors of another length are left out, as no query can match
	// both.
	dims int
	// Appended to only, so a copy of the slices stays valid: vector i
	// is vals[i*dims:(i+1)*dims], of the memory meta[i].
	vals []float32
	meta []vectorMeta
}

type vectorMeta struct {
	seq  int64
	user string
}

// current returns the cache's vectors for model, brought up to date.
func (c *vectorCache) current(ctx context.Context, db *sql.DB, model string) (dims int, vals []float32, meta []vectorMeta, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var removals, lastID int64
	if err := db.QueryRowContext(ctx, `SELECT (SELECT n FROM vector_removals), (SELECT coalesce(max(id), 0) FROM memory_vectors)`).Scan(&removals, &lastID); err != nil {
		return 0, nil, nil, err
	}
	if model != c.model || removals != c.removals || lastID < c.lastID {
		c.model, c.removals, c.lastID, c.dims, c.vals, c.meta = model, removals, 0, 0, nil, nil
	}
	if lastID == c.lastID {
		return c.dims, c.vals, c.meta, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT seq, user, vec FROM memory_vectors WHERE model = ? AND id > ? AND id <= ? ORDER BY id`, model, c.lastID, lastID)
	if err != nil {
		return 0, nil, nil, err
	}
	defer rows.Close()
	dims, vals, meta = c.dims, c.vals, c.meta
	for rows.Next() {
		var m vectorMeta
		var blob []byte
		if err := rows.Scan(&m.seq, &m.user, &blob); err != nil {
			return 0, nil, nil, err
		}
		v, err := DecodeVector(blob)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("vector of memory %d: %w", m.seq, err)
		}
		if dims == 0 {
			dims = len(v)
		}
		if u := unit(v); u != nil && len(u) == dims {
			vals = append(vals, u...)
			meta = append(meta, m)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, nil, err
	}
	c.dims, c.vals, c.meta, c.lastID = dims, vals, meta, lastID
	return dims, vals, meta, nil
}

// scored is a cached vector's cosine to a query.
type scored struct {
	score float32
	seq   int64
}

// bestFirst orders scored vectors best first, the later written first
// among equal scores.
func bestFirst(a, b scored) int {
	if a.score != b.score {
		if a.score > b.score {
			return -1
		}
		return 1
	}
	return cmp.Compare(b.seq, a.seq)
}

// Nearest implements [VectorStore] by exact cosine in Go over the scope's
// vectors (kept in memory between searches, see vectorCache): every
// cosine is computed; the best ones are sorted and their rows read, and
// those no longer active passed over.
func (s *SQLite) Nearest(ctx context.Context, q VectorQuery) ([]Hit, error) {
	qv := unit(q.Vector)
	if qv == nil {
		return nil, fmt.Errorf("%w: the query vector has no direction", ErrBadVector)
	}
	var hits []Hit
	err := s.retry(ctx, func() error {
		dims, vals, meta, err := s.vectors.current(ctx, s.db, q.Model)
		if err != nil {
			return err
		}
		hits = hits[:0]
		if dims != len(qv) {
			return nil
		}
		all := make([]scored, 0, len(meta))
		for i, m := range meta {
			if m.user == "" || m.user == q.User {
				all = append(all, scored{dot32(vals[i*dims:(i+1)*dims], qv), m.seq})
			}
		}
		limit := q.limit()
		// Most searches need only the best few: those are sorted; all of
		// them only when too many of the best are no longer active.
		for _, n := range []int{2*limit + 16, len(all)} {
			hits, err = s.readBest(ctx, best(all, n), limit)
			if err != nil || len(hits) >= limit || n >= len(all) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.dbErr(err)
	}
	return hits, nil
}

// best returns, best first, the n best of all and every other one tied
// with the n-th.
func best(all []scored, n int) []scored {
	if n >= len(all) {
		out := slices.Clone(all)
		slices.SortFunc(out, bestFirst)
		return out
	}
	// The n-th best score, from a min-heap of the n best so far.
	h := make([]float32, 0, n)
	for _, c := range all {
		switch {
		case len(h) < n:
			h = append(h, c.score)
			for i := len(h) - 1; i > 0 && h[(i-1)/2] > h[i]; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case c.score > h[0]:
			h[0] = c.score
			for i := 0; ; {
				l, m := 2*i+1, i
				if l < n && h[l] < h[m] {
					m = l
				}
				if l+1 < n && h[l+1] < h[m] {
					m = l + 1
				}
				if m == i {
					break
				}
				h[i], h[m] = h[m], h[i]
				i = m
			}
		}
	}
	out := make([]scored, 0, n+8)
	for _, c := range all {
		if c.score >= h[0] {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, bestFirst)
	return out
}

// readBest reads the rows of cand (best first) a chunk at a time and
// returns the best limit active ones. A chunk ends past a tie, so that
// equal scores are ordered among themselves by recency, as compareHits
// orders them.
func (s *SQLite) readBest(ctx context.Context, cand []scored, limit int) ([]Hit, error) {
	var hits []Hit
	for i := 0; i < len(cand) && len(hits) < limit; {
		j := min(i+limit-len(hits)+8, len(cand))
		for j < len(cand) && cand[j].score == cand[j-1].score {
			j++
		}
		scores := make(map[int64]float32, j-i)
		keys := make([]any, 0, j-i)
		for _, c := range cand[i:j] {
			scores[c.seq] = c.score
			keys = append(keys, c.seq)
		}
		found, err := s.activeRows(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, h := range found {
			h.Score = float64(scores[h.seq])
			hits = append(hits, h)
		}
		i = j
	}
	slices.SortStableFunc(hits, compareHits)
	return hits[:min(limit, len(hits))], nil
}

// dot32 is the dot product of two vectors of one length in float32, four
// sums at a time: the cosine of two unit vectors to about 1e-6, which is
// what ranking needs, at a quarter of the float64 loop's time.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// activeRows reads the active memories among the rows seqs.
func (s *SQLite) activeRows(ctx context.Context, seqs []any) ([]Hit, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
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
