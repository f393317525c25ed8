package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"
)

// ImportSource yields an import's memories in order, one per call, and
// io.EOF after the last. Another error stops the import with that error.
type ImportSource func() (Memory, error)

// Streamer is a store that imports and exports without holding the
// memories in memory: an import of any length costs the same few
// megabytes. *SQLite is one.
type Streamer interface {
	// ImportFrom is Import reading from next: the same checks and errors
	// (an *ImportError's Index counts the memories read), all or nothing.
	// It returns how many memories were imported.
	ImportFrom(ctx context.Context, next ImportSource) (int, error)
	// ExportTo calls each with every memory, superseded and forgotten ones
	// too, oldest first (List's order reversed), from one snapshot.
	ExportTo(ctx context.Context, each func(Memory) error) error
}

// SliceSource is an ImportSource over ms.
func SliceSource(ms []Memory) ImportSource {
	i := 0
	return func() (Memory, error) {
		if i == len(ms) {
			return Memory{}, io.EOF
		}
		i++
		return ms[i-1], nil
	}
}

// The staging table an import fills first, on its own connection: a
// temporary table lives in SQLite's temp file, not in the process, so the
// checks that need the whole import (ids given twice, superseded_by
// links, loops) run as queries over it, and the memories go into the
// store in one statement inside one transaction.
const (
	stagingTable = `temp.loom_import`
	stagingDDL   = `DROP TABLE IF EXISTS temp.loom_import;
	CREATE TABLE temp.loom_import (
		seq           INTEGER PRIMARY KEY,
		id            TEXT    NOT NULL UNIQUE,
		category      TEXT    NOT NULL,
		content       TEXT    NOT NULL,
		user          TEXT    NOT NULL,
		chat          TEXT    NOT NULL,
		created_s     INTEGER NOT NULL,
		created_ns    INTEGER NOT NULL,
		superseded_by TEXT    NOT NULL,
		forgotten     INTEGER NOT NULL
	);
	CREATE INDEX temp.loom_import_superseded_by ON loom_import (superseded_by);`
	stagingCols = `id, category, content, user, chat, created_s, created_ns, superseded_by, forgotten`
)

// ImportFrom implements [Streamer]. Each memory is checked as it is read
// (as PrepareImport checks one) and written to a staging table; then, in
// one transaction on the store, the import's links are checked with
// queries (loops, then targets and scopes as CheckImportLinks, then ids
// already stored) and the staged rows copied in, in the order read.
func (s *SQLite) ImportFrom(ctx context.Context, next ImportSource) (int, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, s.dbErr(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, stagingDDL); err != nil {
		return 0, s.dbErr(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+stagingTable)
	s.wmu.Lock()
	now := s.now().UTC()
	s.wmu.Unlock()
	n, err := stage(ctx, conn, s.cats, now, next)
	if err != nil {
		return 0, s.dbErr(err)
	}
	if err := stagedLoop(ctx, conn); err != nil {
		return 0, s.dbErr(err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err = s.retry(ctx, func() error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := stagedLinks(ctx, tx); err != nil {
			return err
		}
		var seq int64
		var id string
		err = tx.QueryRowContext(ctx, `SELECT s.seq, s.id FROM `+stagingTable+` s JOIN main.memories m ON m.id = s.id ORDER BY s.seq LIMIT 1`).Scan(&seq, &id)
		if err == nil {
			return &userError{&ImportError{Index: int(seq), ID: id, Err: errors.New("id already exists in the store")}}
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// As Import: the change counter moves once, and the rows are
		// indexed in one statement after they are in.
		if _, err := tx.ExecContext(ctx, `DROP TRIGGER memories_changed_insert; DROP TRIGGER memories_fts_insert`); err != nil {
			return err
		}
		var lastSeq int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM memories`).Scan(&lastSeq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO main.memories (`+stagingCols+`) SELECT `+stagingCols+` FROM `+stagingTable+` ORDER BY seq`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE changes SET n = n + 1`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memories_fts (rowid, content, category) SELECT seq, content, category FROM memories WHERE seq > ?`, lastSeq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertTrigger+`; `+ftsInsertTrigger); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return 0, s.dbErr(err)
	}
	return n, nil
}

// stage reads next to its end into the staging table, checking each
// memory; seq is the memory's index in the import.
func stage(ctx context.Context, conn *sql.Conn, cats []Category, now time.Time, next ImportSource) (int, error) {
	// A deferred transaction: the store's transactions begin IMMEDIATE,
	// taking the database's write lock, which writing the staging table
	// does not need; the import waits for the lock only to copy in.
	if _, err := conn.ExecContext(ctx, `BEGIN DEFERRED`); err != nil {
		return 0, err
	}
	committed := false
	defer func() {
		if !committed {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	ins, err := conn.PrepareContext(ctx, `INSERT INTO `+stagingTable+` (seq, `+stagingCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	i := 0
	for ; ; i++ {
		m, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, &userError{err}
		}
		c, err := prepareOne(cats, now, m)
		if err != nil {
			return 0, &userError{&ImportError{Index: i, ID: m.ID, Err: err}}
		}
		res, err := ins.ExecContext(ctx, i, c.ID, c.Category, c.Content, c.User, c.Chat, c.CreatedAt.Unix(), c.CreatedAt.Nanosecond(), c.SupersededBy, c.Forgotten)
		if err != nil {
			return 0, err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return 0, &userError{&ImportError{Index: i, ID: c.ID, Err: errDuplicateID}}
		}
	}
	ins.Close()
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return 0, err
	}
	committed = true
	return i, nil
}

// stagedLoop refuses superseded_by links that loop among the staged
// memories, with PrepareImport's error. Each memory has one link at most,
// so the memories whose links end (at no link, or at a memory outside the
// import) are found walking back from those ends; the first one left over
// leads into a loop.
func stagedLoop(ctx context.Context, conn *sql.Conn) error {
	var start int64
	err := conn.QueryRowContext(ctx, `WITH RECURSIVE ends(id) AS (
			SELECT s.id FROM `+stagingTable+` s
				WHERE s.superseded_by = '' OR NOT EXISTS (SELECT 1 FROM `+stagingTable+` t WHERE t.id = s.superseded_by)
			UNION ALL
			SELECT s.id FROM `+stagingTable+` s JOIN ends e ON s.superseded_by = e.id
		)
		SELECT seq FROM `+stagingTable+` WHERE id NOT IN (SELECT id FROM ends) ORDER BY seq LIMIT 1`).Scan(&start)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	// Follow the links from start until one comes back: the loop is the
	// path from that memory's first visit on. Only this error's path is
	// held.
	at := map[int64]int{}
	var path []struct {
		seq int64
		id  string
	}
	seq := start
	for {
		if k, seen := at[seq]; seen {
			var ids []string
			for _, p := range path[k:] {
				ids = append(ids, p.id)
			}
			first := ids[0]
			return &userError{&ImportError{Index: int(seq), ID: first, Err: fmt.Errorf("superseded_by links loop (%s → %s): %w", joinIDs(ids), first, ErrCycle)}}
		}
		var id string
		var next int64
		err := conn.QueryRowContext(ctx, `SELECT s.id, t.seq FROM `+stagingTable+` s JOIN `+stagingTable+` t ON t.id = s.superseded_by WHERE s.seq = ?`, seq).Scan(&id, &next)
		if err != nil {
			return err // a memory left over always links to another staged one
		}
		at[seq] = len(path)
		path = append(path, struct {
			seq int64
			id  string
		}{seq, id})
		seq = next
	}
}

// stagedLinks checks every staged superseded_by as CheckImportLinks does:
// it names a staged or stored memory, of the same scope; the first one in
// import order that does not is the error.
func stagedLinks(ctx context.Context, tx *sql.Tx) error {
	var (
		seq              int64
		id, user, target string
		owner            sql.NullString
	)
	err := tx.QueryRowContext(ctx, `SELECT s.seq, s.id, s.user, s.superseded_by, coalesce(t.user, m.user)
		FROM `+stagingTable+` s
		LEFT JOIN `+stagingTable+` t ON t.id = s.superseded_by
		LEFT JOIN main.memories m ON m.id = s.superseded_by
		WHERE s.superseded_by <> '' AND (coalesce(t.user, m.user) IS NULL OR coalesce(t.user, m.user) <> s.user)
		ORDER BY s.seq LIMIT 1`).Scan(&seq, &id, &user, &target, &owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	case !owner.Valid:
		return &userError{&ImportError{Index: int(seq), ID: id, Err: fmt.Errorf("superseded_by %q: %w", target, ErrNotFound)}}
	}
	return &userError{&ImportError{Index: int(seq), ID: id, Err: &ScopeError{ID: id, OwnerUser: user, ByUser: owner.String}}}
}

// ExportTo implements [Streamer]: one query, read row by row.
func (s *SQLite) ExportTo(ctx context.Context, each func(Memory) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id, category, content, user, chat, created_s, created_ns, superseded_by, forgotten
		FROM memories ORDER BY created_s, created_ns, seq`)
	if err != nil {
		return s.dbErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var m Memory
		var sec, nsec int64
		if err := rows.Scan(&m.ID, &m.Category, &m.Content, &m.User, &m.Chat, &sec, &nsec, &m.SupersededBy, &m.Forgotten); err != nil {
			return s.dbErr(err)
		}
		m.CreatedAt = time.Unix(sec, nsec).UTC()
		if err := each(m); err != nil {
			return err
		}
	}
	return s.dbErr(rows.Err())
}
