package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loomctx/loom/memory"
)

var _ memory.VectorStore = (*Memories)(nil)

// Unembedded implements [memory.VectorStore]; Key is the memory's seq.
// Sequence numbers are taken at insert, so a write that commits after a
// later one's can appear behind a reader's place: the worker's periodic
// sweep from the start finds it.
func (s *Memories) Unembedded(ctx context.Context, model string, after int64, limit int) (todo []memory.Unembedded, last int64, err error) {
	limit = max(limit, 1)
	if err := s.db.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM loom_memories WHERE workspace = $1`, s.workspace).Scan(&last); err != nil {
		return nil, 0, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	rows, err := s.db.pool.Query(ctx, `SELECT m.seq, m.content FROM loom_memories m
		WHERE m.workspace = $1 AND m.seq > $2 AND m.seq <= $3 AND m.superseded_by = '' AND NOT m.forgotten
			AND NOT EXISTS (SELECT 1 FROM loom_memory_vectors v WHERE v.seq = m.seq AND v.model = $4)
		ORDER BY m.seq LIMIT $5`, s.workspace, after, last, model, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	todo, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Unembedded, error) {
		var u memory.Unembedded
		err := r.Scan(&u.Key, &u.Content)
		return u, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	if len(todo) == limit {
		last = todo[len(todo)-1].Key
	}
	return todo, max(last, after), nil
}

// PutVectors implements [memory.VectorStore], in one transaction. A key
// of another workspace is passed over like a missing memory.
func (s *Memories) PutVectors(ctx context.Context, model string, vs []memory.Vector) error {
	for _, v := range vs {
		if err := memory.CheckVector(v.Values); err != nil {
			return fmt.Errorf("memory %d: %w", v.Key, err)
		}
	}
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, v := range vs {
			b.Queue(`INSERT INTO loom_memory_vectors (seq, model, vec)
				SELECT seq, $2, $3 FROM loom_memories WHERE seq = $1 AND workspace = $4
				ON CONFLICT (seq, model) DO NOTHING`, v.Key, model, memory.EncodeVector(v.Values), s.workspace)
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	return nil
}

// vectorCache is the store's copy of the workspace's vectors of one model
// (a memory.VectorSet), so that a search reads from PostgreSQL a summary
// of them (count, sum and largest of their keys), the vectors of memories
// newer than the copy's newest, and the rows of its best hits.
//
// Key: the model. Invalidated: when the copy, with the newer vectors
// added, still does not match the summary (a vector written for an older
// memory, by the backfill, or one removed with its memory), it is read
// again whole. Its summary is always of what it holds, so a vector
// written while it is read is found on the next search.
type vectorCache struct {
	mu    sync.Mutex
	model string
	sum   vectorSum
	set   memory.VectorSet
}

// vectorSum summarises a set of vectors by their keys.
type vectorSum struct{ count, total, newest int64 }

func (v *vectorSum) add(key int64) {
	v.count++
	v.total += key
	v.newest = max(v.newest, key)
}

// current returns the cache's vectors for model, brought up to date.
func (c *vectorCache) current(ctx context.Context, s *Memories, model string) (memory.VectorSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var now vectorSum
	if err := s.db.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(v.seq), 0)::bigint, coalesce(max(v.seq), 0)
		FROM loom_memory_vectors v JOIN loom_memories m ON m.seq = v.seq
		WHERE m.workspace = $1 AND v.model = $2`, s.workspace, model).Scan(&now.count, &now.total, &now.newest); err != nil {
		return memory.VectorSet{}, err
	}
	if model != c.model {
		c.model, c.sum, c.set = model, vectorSum{}, memory.VectorSet{}
	}
	if now == c.sum {
		return c.set, nil
	}
	sum, set := c.sum, c.set
	if err := s.readVectors(ctx, model, sum.newest, &sum, &set); err != nil {
		return memory.VectorSet{}, err
	}
	if sum != now {
		sum, set = vectorSum{}, memory.VectorSet{}
		if err := s.readVectors(ctx, model, 0, &sum, &set); err != nil {
			return memory.VectorSet{}, err
		}
	}
	c.sum, c.set = sum, set
	return set, nil
}

// readVectors adds to set (and sum) the workspace's vectors of model for
// memories keyed after after.
func (s *Memories) readVectors(ctx context.Context, model string, after int64, sum *vectorSum, set *memory.VectorSet) error {
	rows, err := s.db.pool.Query(ctx, `SELECT v.seq, m.user_id, v.vec
		FROM loom_memory_vectors v JOIN loom_memories m ON m.seq = v.seq
		WHERE m.workspace = $1 AND v.model = $2 AND v.seq > $3`, s.workspace, model, after)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key int64
		var user string
		var blob []byte
		if err := rows.Scan(&key, &user, &blob); err != nil {
			return err
		}
		sum.add(key)
		if err := set.AddEncoded(key, user, blob); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Nearest implements [memory.VectorStore] by exact cosine in Go over the
// scope's vectors, kept in memory between searches (see vectorCache and
// memory.VectorSet.Nearest). nearestPlain is the reference it is tested
// against.
func (s *Memories) Nearest(ctx context.Context, q memory.VectorQuery) ([]memory.Hit, error) {
	if err := memory.CheckVector(q.Vector); err != nil {
		return nil, fmt.Errorf("the query vector: %w", err)
	}
	set, err := s.vectors.current(ctx, s, q.Model)
	if err != nil {
		return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	hits, err := set.Nearest(ctx, q, s.activeRows)
	if err != nil {
		return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	return hits, nil
}

// activeRows reads the workspace's active memories among keys.
func (s *Memories) activeRows(ctx context.Context, keys []int64) ([]memory.Candidate, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT seq, id, category, content, user_id, chat, created_s, created_ns
		FROM loom_memories WHERE workspace = $1 AND seq = ANY($2) AND superseded_by = '' AND NOT forgotten`, s.workspace, keys)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Candidate, error) {
		var c memory.Candidate
		var sec int64
		var nsec int32
		err := r.Scan(&c.Key, &c.ID, &c.Category, &c.Content, &c.User, &c.Chat, &sec, &nsec)
		c.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
		return c, err
	})
}

// nearestPlain is Nearest by memory.NearestPlain over the scope's vectors
// read with their memories in one query: the reference.
func (s *Memories) nearestPlain(ctx context.Context, q memory.VectorQuery) ([]memory.Hit, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT m.seq, m.id, m.category, m.content, m.user_id, m.chat, m.created_s, m.created_ns, v.vec
		FROM loom_memory_vectors v JOIN loom_memories m ON m.seq = v.seq
		WHERE m.workspace = $1 AND v.model = $2 AND m.superseded_by = '' AND NOT m.forgotten AND m.user_id IN ('', $3)`,
		s.workspace, q.Model, q.User)
	if err != nil {
		return nil, err
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Candidate, error) {
		var c memory.Candidate
		var sec int64
		var nsec int32
		var blob []byte
		if err := r.Scan(&c.Key, &c.ID, &c.Category, &c.Content, &c.User, &c.Chat, &sec, &nsec, &blob); err != nil {
			return c, err
		}
		c.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
		v, err := memory.DecodeVector(blob)
		c.Vector = v
		return c, err
	})
	if err != nil {
		return nil, err
	}
	return memory.NearestPlain(q, cs), nil
}
