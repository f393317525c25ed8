package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ImportSource yields an import's memories in order, one per call, and
// io.EOF after the last. Another error stops the import with that error.
type ImportSource func() (Memory, error)

// Streamer is a store that imports and exports without holding the
// memories in memory: an import of any length costs the same few
// megabytes. *SQLite and PostgreSQL's store (pgstore) are.
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
		if err := optimizeAfterImport(ctx, tx, n, lastSeq); err != nil {
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
	// Rows go in stageBatch at a time, one statement each: a statement's
	// round trip through database/sql costs more than its row. An id
	// given twice is found by the UNIQUE constraint, and then looked for
	// in the batch to name the memory.
	one := `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	ins, err := conn.PrepareContext(ctx, `INSERT INTO `+stagingTable+` (seq, `+stagingCols+`) VALUES `+strings.Repeat(one+`, `, stageBatch-1)+one)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	args := make([]any, 0, 10*stageBatch)
	flush := func(stmt *sql.Stmt) error {
		if len(args) == 0 {
			return nil
		}
		if stmt == nil {
			var err error
			if stmt, err = conn.PrepareContext(ctx, `INSERT INTO `+stagingTable+` (seq, `+stagingCols+`) VALUES `+strings.Repeat(one+`, `, len(args)/10-1)+one); err != nil {
				return err
			}
			defer stmt.Close()
		}
		_, err := stmt.ExecContext(ctx, args...)
		if err != nil && strings.Contains(err.Error(), "UNIQUE") {
			return duplicateIn(ctx, conn, args)
		}
		args = args[:0]
		return err
	}
	i := 0
	for ; ; i++ {
		m, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, &userError{err}
		}
		c, err := PrepareOne(cats, now, m)
		if err != nil {
			// An id given twice, earlier in the batch or here, comes
			// first, as in PrepareImport.
			if err := flush(nil); err != nil {
				return 0, err
			}
			if m.ID != "" {
				// duplicateIn always answers: a *userError names the
				// duplicate; anything else means the staged rows did not
				// say, and the plain error below stands.
				if derr, dup := duplicateIn(ctx, conn, []any{i, m.ID}).(*userError); dup {
					return 0, derr
				}
			}
			return 0, &userError{&ImportError{Index: i, ID: m.ID, Err: err}}
		}
		args = append(args, i, c.ID, c.Category, c.Content, c.User, c.Chat, c.CreatedAt.Unix(), c.CreatedAt.Nanosecond(), c.SupersededBy, c.Forgotten)
		if len(args) == cap(args) {
			if err := flush(ins); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(nil); err != nil {
		return 0, err
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return 0, err
	}
	committed = true
	return i, nil
}

// stageBatch is how many memories one staging statement writes.
const stageBatch = 50

// duplicateIn names the first memory of a refused batch (its arguments,
// ten a memory; a lone seq and id will do) whose id is staged already or
// earlier in the batch.
func duplicateIn(ctx context.Context, conn *sql.Conn, args []any) error {
	seen := map[string]bool{}
	for k := 0; k+1 < len(args); k += 10 {
		seq, id := args[k].(int), args[k+1].(string)
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM `+stagingTable+` WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 || seen[id] {
			return &userError{&ImportError{Index: seq, ID: id, Err: ErrDuplicateID}}
		}
		seen[id] = true
	}
	return errors.New("staging an import: a UNIQUE constraint failed with no id given twice")
}

// stagedLoop refuses superseded_by links that loop among the staged
// memories, with PrepareImport's error. Each memory has one link at most,
// so the linked memories whose links end (at a memory that links nowhere
// inside the import) are found walking back from those ends; the first one
// left over leads into a loop.
func stagedLoop(ctx context.Context, conn *sql.Conn) error {
	// Only memories linked to another staged one can be in a loop, or
	// lead into one: they are few next to the import, so the walk is over
	// them alone.
	if _, err := conn.ExecContext(ctx, `DROP TABLE IF EXISTS temp.loom_import_links;
		CREATE TABLE temp.loom_import_links AS
			SELECT s.seq, s.id, s.superseded_by FROM `+stagingTable+` s JOIN `+stagingTable+` t ON t.id = s.superseded_by
			WHERE s.superseded_by <> '';
		CREATE INDEX temp.loom_import_links_by ON loom_import_links (superseded_by);
		CREATE UNIQUE INDEX temp.loom_import_links_id ON loom_import_links (id)`); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS temp.loom_import_links`)
	var start int64
	err := conn.QueryRowContext(ctx, `WITH RECURSIVE ends(id) AS (
			SELECT l.id FROM temp.loom_import_links l
				WHERE NOT EXISTS (SELECT 1 FROM temp.loom_import_links t WHERE t.id = l.superseded_by)
			UNION ALL
			SELECT l.id FROM temp.loom_import_links l JOIN ends e ON l.superseded_by = e.id
		)
		SELECT seq FROM temp.loom_import_links WHERE id NOT IN (SELECT id FROM ends) ORDER BY seq LIMIT 1`).Scan(&start)
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
			return &userError{LoopError(int(seq), ids)}
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
