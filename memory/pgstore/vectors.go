package pgstore

import (
	"context"
	"fmt"
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

// Nearest implements [memory.VectorStore] by exact cosine in Go
// (memory.NearestPlain) over the vectors of q.User's scope, read with
// their memories in one query.
func (s *Memories) Nearest(ctx context.Context, q memory.VectorQuery) ([]memory.Hit, error) {
	if err := memory.CheckVector(q.Vector); err != nil {
		return nil, fmt.Errorf("the query vector: %w", err)
	}
	rows, err := s.db.pool.Query(ctx, `SELECT m.seq, m.id, m.category, m.content, m.user_id, m.chat, m.created_s, m.created_ns, v.vec
		FROM loom_memory_vectors v JOIN loom_memories m ON m.seq = v.seq
		WHERE m.workspace = $1 AND v.model = $2 AND m.superseded_by = '' AND NOT m.forgotten AND m.user_id IN ('', $3)`,
		s.workspace, q.Model, q.User)
	if err != nil {
		return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
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
		return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	return memory.NearestPlain(q, cs), nil
}
