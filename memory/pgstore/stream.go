package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/loomctx/loom/memory"
)

// An import is staged first in a temporary table on its own connection,
// with COPY, a memory checked (memory.PrepareOne) as it is read: the
// import holds one memory, never the list. The checks that need the
// whole import (ids given twice, loops, links, ids already stored) are
// queries over the staged rows, and the rows go into loom_memories in one
// statement inside one transaction: all or nothing, and other writers
// never wait while the file is read.
const (
	stagingTable = `pg_temp.loom_import`
	stagingDDL   = `DROP TABLE IF EXISTS pg_temp.loom_import;
	CREATE TEMP TABLE loom_import (
		seq           bigint  NOT NULL,
		id            text    NOT NULL,
		category      text    NOT NULL,
		content       text    NOT NULL,
		user_id       text    NOT NULL,
		chat          text    NOT NULL,
		created_s     bigint  NOT NULL,
		created_ns    integer NOT NULL,
		superseded_by text    NOT NULL,
		forgotten     boolean NOT NULL
	)`
	stagingCols = `id, category, content, user_id, chat, created_s, created_ns, superseded_by, forgotten`
)

var _ memory.Streamer = (*Memories)(nil)

// ImportFrom implements [memory.Streamer]: Import reading from next, with
// the same checks and errors (the first fault in the order read, as
// [memory.PrepareImport] finds it), all or nothing, in memory that does
// not grow with the import.
//
// A stream cannot be read twice, so unlike the store's other writes an
// import that loses its connection is not retried here: the error says
// so (and matches ErrUnavailable), and the caller sends it again. Import,
// which holds its memories, does retry.
func (s *Memories) ImportFrom(ctx context.Context, next memory.ImportSource) (int, error) {
	n, commitSent, err := s.importFrom(ctx, next)
	if err != nil && commitSent && isConnErr(err) {
		return 0, fmt.Errorf("memory: PostgreSQL: %w: the import's COMMIT was lost, so it may or may not be stored: %v", ErrUnavailable, err)
	}
	return n, s.importErr(err)
}

// importFrom is one attempt of ImportFrom; commitSent says whether its
// COMMIT went out.
func (s *Memories) importFrom(ctx context.Context, next memory.ImportSource) (n int, commitSent bool, err error) {
	conn, err := s.db.pool.Acquire(ctx)
	if err != nil {
		return 0, false, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, stagingDDL); err != nil {
		return 0, false, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+stagingTable)
	s.stampMu.Lock()
	now := s.now().UTC()
	s.stampMu.Unlock()
	n, err = s.stage(ctx, conn, now, next)
	if err != nil || n == 0 {
		return 0, false, err
	}
	if err := stagedLoop(ctx, conn); err != nil {
		return 0, false, err
	}
	users, commitSent, err := s.runTx(ctx, conn.Begin, func(tx pgx.Tx) ([]string, error) {
		// Serialise imports of one workspace, so the id check below holds
		// until COMMIT.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('loom_import'), hashtext($1))`, s.workspace); err != nil {
			return nil, err
		}
		var seq int64
		var id string
		err := tx.QueryRow(ctx, `SELECT s.seq, s.id FROM `+stagingTable+` s
			JOIN loom_memories m ON m.workspace = $1 AND m.id = s.id ORDER BY s.seq LIMIT 1`, s.workspace).Scan(&seq, &id)
		if err == nil {
			return nil, &userErr{&memory.ImportError{Index: int(seq), ID: id, Err: errors.New("id already exists in the store")}}
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		if err := s.stagedLinks(ctx, tx); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO loom_memories (workspace, `+stagingCols+`)
			SELECT $1, `+stagingCols+` FROM `+stagingTable+` ORDER BY seq`, s.workspace); err != nil {
			return nil, err
		}
		// The users whose prompts change; past 64, one notice for the
		// whole workspace.
		rows, err := tx.Query(ctx, `SELECT DISTINCT user_id FROM `+stagingTable+` LIMIT 65`)
		if err != nil {
			return nil, err
		}
		users, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		if len(users) > 64 {
			return []string{""}, nil
		}
		return users, nil
	})
	if err != nil {
		return 0, commitSent, err
	}
	for _, u := range users {
		s.invalidate(u, false)
	}
	return n, true, nil
}

// importErr returns a refusal as it is and marks a lost connection as
// ErrUnavailable.
func (s *Memories) importErr(err error) error {
	if err == nil {
		return nil
	}
	var ue *userErr
	if errors.As(err, &ue) {
		return ue.err
	}
	if isConnErr(err) {
		return fmt.Errorf("memory: PostgreSQL: %w: %v", ErrUnavailable, err)
	}
	return err
}

// stage copies next into the staging table, checking each memory as it
// comes. It returns how many were read, or the import's first fault in
// the order read: an id given twice (found once the rows are in), or
// the first memory refused, or next's own error.
func (s *Memories) stage(ctx context.Context, conn *pgxpool.Conn, now time.Time, next memory.ImportSource) (int, error) {
	var (
		n     int
		fault error  // what stopped the reading, at memory n
		id    string // that memory's id, when it has one
	)
	_, err := conn.CopyFrom(ctx, pgx.Identifier{"pg_temp", "loom_import"},
		[]string{"seq", "id", "category", "content", "user_id", "chat", "created_s", "created_ns", "superseded_by", "forgotten"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			m, err := next()
			if err == io.EOF {
				return nil, nil
			}
			if err != nil {
				fault = &userErr{err}
				return nil, nil // the rows read so far stay, to look for an earlier fault
			}
			c, err := memory.PrepareOne(s.cats, now, m)
			if err != nil {
				fault, id = &userErr{&memory.ImportError{Index: n, ID: m.ID, Err: err}}, m.ID
				return nil, nil
			}
			n++
			return []any{int64(n - 1), c.ID, c.Category, c.Content, c.User, c.Chat, c.CreatedAt.Unix(), int32(c.CreatedAt.Nanosecond()), c.SupersededBy, c.Forgotten}, nil
		}))
	if err != nil {
		return 0, err
	}
	if _, err := conn.Exec(ctx, `CREATE INDEX ON `+stagingTable+` (id, seq); ANALYZE `+stagingTable); err != nil {
		return 0, err
	}
	// An id given twice: the first memory, in the order read, whose id an
	// earlier one has. It comes before a refused memory after it, and
	// before the refused memory's own fault (as in PrepareImport).
	var seq int64
	var dup string
	err = conn.QueryRow(ctx, `SELECT s.seq, s.id FROM `+stagingTable+` s
		WHERE EXISTS (SELECT 1 FROM `+stagingTable+` t WHERE t.id = s.id AND t.seq < s.seq)
		ORDER BY s.seq LIMIT 1`).Scan(&seq, &dup)
	if err == nil {
		return 0, &userErr{&memory.ImportError{Index: int(seq), ID: dup, Err: memory.ErrDuplicateID}}
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	if fault != nil && id != "" {
		var staged bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+stagingTable+` WHERE id = $1)`, id).Scan(&staged); err != nil {
			return 0, err
		}
		if staged {
			return 0, &userErr{&memory.ImportError{Index: n, ID: id, Err: memory.ErrDuplicateID}}
		}
	}
	if fault != nil {
		return 0, fault
	}
	return n, nil
}

// stagedLoop refuses superseded_by links that loop among the staged
// memories, with PrepareImport's error. Each memory has one link at most,
// so the linked memories whose links end (at a memory that links nowhere
// inside the import) are found walking back from those ends; the first one
// left over, in the order read, leads into a loop.
func stagedLoop(ctx context.Context, conn *pgxpool.Conn) error {
	// Only memories linked to another staged one can be in a loop, or
	// lead into one: they are few next to the import, so the walk is over
	// them alone.
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS pg_temp.loom_import_links;
		CREATE TEMP TABLE loom_import_links AS
			SELECT s.seq, s.id, s.superseded_by, t.seq AS next FROM `+stagingTable+` s JOIN `+stagingTable+` t ON t.id = s.superseded_by
			WHERE s.superseded_by <> '';
		CREATE INDEX ON pg_temp.loom_import_links (superseded_by);
		CREATE UNIQUE INDEX ON pg_temp.loom_import_links (id);
		CREATE UNIQUE INDEX ON pg_temp.loom_import_links (seq)`); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS pg_temp.loom_import_links`)
	var start int64
	err := conn.QueryRow(ctx, `WITH RECURSIVE ends(id) AS (
			SELECT l.id FROM pg_temp.loom_import_links l
				WHERE NOT EXISTS (SELECT 1 FROM pg_temp.loom_import_links t WHERE t.id = l.superseded_by)
			UNION ALL
			SELECT l.id FROM pg_temp.loom_import_links l JOIN ends e ON l.superseded_by = e.id
		)
		SELECT l.seq FROM pg_temp.loom_import_links l WHERE NOT EXISTS (SELECT 1 FROM ends e WHERE e.id = l.id)
		ORDER BY l.seq LIMIT 1`).Scan(&start)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	// Follow the links from start until one comes back: the loop is the
	// path from that memory's first visit on. Only this error's path is
	// held.
	at := map[int64]int{}
	var ids []string
	seq := start
	for {
		if k, seen := at[seq]; seen {
			return &userErr{memory.LoopError(int(seq), ids[k:])}
		}
		var id string
		var next int64
		if err := conn.QueryRow(ctx, `SELECT id, next FROM pg_temp.loom_import_links WHERE seq = $1`, seq).Scan(&id, &next); err != nil {
			return err // a memory left over always links to another staged one
		}
		at[seq] = len(ids)
		ids = append(ids, id)
		seq = next
	}
}

// stagedLinks checks every staged superseded_by as CheckImportLinks does:
// it names a staged or stored memory, of the same scope; the first one in
// the order read that does not is the error.
func (s *Memories) stagedLinks(ctx context.Context, tx pgx.Tx) error {
	var (
		seq              int64
		id, user, target string
		owner            *string
	)
	err := tx.QueryRow(ctx, `SELECT s.seq, s.id, s.user_id, s.superseded_by, coalesce(t.user_id, m.user_id)
		FROM `+stagingTable+` s
		LEFT JOIN `+stagingTable+` t ON t.id = s.superseded_by
		LEFT JOIN loom_memories m ON m.workspace = $1 AND m.id = s.superseded_by
		WHERE s.superseded_by <> '' AND (coalesce(t.user_id, m.user_id) IS NULL OR coalesce(t.user_id, m.user_id) <> s.user_id)
		ORDER BY s.seq LIMIT 1`, s.workspace).Scan(&seq, &id, &user, &target, &owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	case owner == nil:
		return &userErr{&memory.ImportError{Index: int(seq), ID: id, Err: fmt.Errorf("superseded_by %q: %w", target, memory.ErrNotFound)}}
	}
	return &userErr{&memory.ImportError{Index: int(seq), ID: id, Err: &memory.ScopeError{ID: id, OwnerUser: user, ByUser: *owner}}}
}

// ExportTo implements [memory.Streamer]: every memory of the workspace,
// oldest first (List's order reversed), read row by row from one
// snapshot.
func (s *Memories) ExportTo(ctx context.Context, each func(memory.Memory) error) error {
	tx, err := s.db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(ctx, `SELECT id, category, content, user_id, chat, created_s, created_ns, superseded_by, forgotten
		FROM loom_memories WHERE workspace = $1 ORDER BY created_s, created_ns, seq`, s.workspace)
	if err != nil {
		return fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	defer rows.Close()
	for rows.Next() {
		var m memory.Memory
		var sec int64
		var nsec int32
		if err := rows.Scan(&m.ID, &m.Category, &m.Content, &m.User, &m.Chat, &sec, &nsec, &m.SupersededBy, &m.Forgotten); err != nil {
			return fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
		}
		m.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
		if err := each(m); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	return nil
}
