package memory

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver; pure Go, no cgo
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultDBPath is where a workspace keeps its memory database, relative to
// the workspace folder.
const DefaultDBPath = ".loom/memory.db"

// ErrNotFound is wrapped by errors about a memory id that does not exist.
var ErrNotFound = errors.New("no such memory")

// ErrUnavailable is wrapped by errors that say the store cannot be used
// for now (a database server out of reach, a write lock held past the
// bound) and the same request may succeed later: a server answers 503.
var ErrUnavailable = errors.New("memory store unavailable")

// DBError is a failure of the database file itself: it cannot be opened, is
// not a SQLite database, is corrupt, or was written by a newer loom. Path
// names the file, so a caller can report it as a diagnostic and go on.
type DBError struct {
	Path string
	Err  error
}

func (e *DBError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *DBError) Unwrap() error { return e.Err }

// Option configures a [SQLite] store.
type Option func(*SQLite)

// WithNow sets the clock that stamps created_at; the default is time.Now.
func WithNow(now func() time.Time) Option {
	return func(s *SQLite) {
		if now != nil {
			s.now = now
		}
	}
}

// WithCategories sets the categories Add and Import accept; the default is
// [DefaultCategories]. loom.yaml's list is passed here.
func WithCategories(cats []Category) Option {
	return func(s *SQLite) {
		if len(cats) > 0 {
			s.cats = cats
		}
	}
}

// WithIDs sets the function that makes new memory ids; the default is
// [NewID]. Tests use it to get ids they can name.
func WithIDs(newID func() string) Option {
	return func(s *SQLite) {
		if newID != nil {
			s.newID = newID
		}
	}
}

// WithBusyWait bounds how long a write waits for another process's write
// lock (a long import, say) before it fails with a *[BusyError]; the
// default is [DefaultBusyWait].
func WithBusyWait(d time.Duration) Option {
	return func(s *SQLite) {
		if d > 0 {
			s.busyWait = d
		}
	}
}

// DefaultBusyWait is how long a write waits for another writer by default.
const DefaultBusyWait = 30 * time.Second

// SQLite is the default [Store]: one SQLite file in WAL mode, so readers
// never wait for a writer. It is safe for concurrent use, and several
// processes may share the file.
type SQLite struct {
	db    *sql.DB
	path  string
	abs   string // path made absolute
	now   func() time.Time
	cats  []Category
	newID func() string
	// busyWait bounds the retries of a write that finds the file locked.
	busyWait time.Duration

	// wmu serialises this process's writers; other processes wait on
	// SQLite's busy timeout instead.
	wmu sync.Mutex

	// listSaved is set once this handle saved a listing (listcache.go).
	listSaved atomic.Bool

	// Search reads through connections of its own (searchDSN), made on
	// first use, with its prepared statements (searchSt); see
	// searchStatements.
	searchDSN string
	searchMu  sync.Mutex
	searchDB  *sql.DB
	searchSt  *searchStmts
	closed    bool // under searchMu: Search opens nothing after Close

	// vectors is Nearest's copy of the stored vectors.
	vectors vectorCache
}

var _ Store = (*SQLite)(nil)

// NewID returns a fresh memory id: "m_" and 12 random hex digits.
func NewID() string {
	var b [6]byte
	rand.Read(b[:])
	return "m_" + hex.EncodeToString(b[:])
}

// DBPath is the memory database of the workspace folder root.
func DBPath(root string) string {
	return filepath.Join(root, filepath.FromSlash(DefaultDBPath))
}

// Open opens the memory database of the workspace folder root, creating
// .loom/memory.db if it does not exist yet. A folder it creates is private
// to the user (0700), as is the database (0600).
func Open(root string, opts ...Option) (*SQLite, error) {
	path := DBPath(root)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, &DBError{Path: path, Err: err}
	}
	return OpenSQLite(path, opts...)
}

// OpenIfExists is Open for readers such as a render: when the workspace has
// no memory database it returns nil and no error, without creating
// anything.
func OpenIfExists(root string, opts ...Option) (*SQLite, error) {
	path := DBPath(root)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, &DBError{Path: path, Err: err}
	}
	return OpenSQLite(path, opts...)
}

// OpenSQLite opens (creating if needed) the SQLite memory database at path
// and brings its schema up to date. A file that is not a SQLite database,
// or is corrupt, gives a *[DBError] naming it.
func OpenSQLite(path string, opts ...Option) (*SQLite, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &DBError{Path: path, Err: err}
	}
	if st, err := os.Stat(abs); err == nil && !st.Mode().IsRegular() {
		return nil, &DBError{Path: path, Err: errors.New("not a regular file")}
	}
	// Create the file first, private to the user: SQLite would make it
	// 0644 less the umask, and it gives its -wal and -shm files the
	// database's own mode.
	if f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, &DBError{Path: path, Err: err}
	}
	// A file: URI, so that any byte in the path is escaped rather than
	// read as the start of the parameters.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(1000)") // then SQLite.retry waits, up to busyWait
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate") // writers queue at BEGIN instead of failing mid-transaction
	dsn := "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, &DBError{Path: path, Err: err}
	}
	q.Add("_pragma", "mmap_size("+strconv.Itoa(searchMmap)+")")
	s := &SQLite{db: db, searchDSN: "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?" + q.Encode(), path: path, abs: abs, now: time.Now, cats: DefaultCategories, newID: NewID, busyWait: DefaultBusyWait}
	for _, o := range opts {
		o(s)
	}
	if err := s.retry(context.Background(), func() error { return s.migrate(context.Background()) }); err != nil {
		db.Close()
		return nil, s.dbErr(err)
	}
	return s, nil
}

// Path is the database file the store was opened on.
func (s *SQLite) Path() string { return s.path }

// Close closes the database.
func (s *SQLite) Close() error {
	s.searchMu.Lock()
	s.closed = true
	if s.searchSt != nil {
		s.searchSt.close()
		s.searchSt = nil
	}
	if s.searchDB != nil {
		s.searchDB.Close()
		s.searchDB = nil
	}
	s.searchMu.Unlock()
	return s.db.Close()
}

// dbErr wraps a database failure with the file's name and plain words for
// the two ways a file can be unusable.
func (s *SQLite) dbErr(err error) error {
	if err == nil {
		return nil
	}
	var de *DBError
	var be *BusyError
	if errors.As(err, &de) || errors.As(err, &be) {
		return err
	}
	var ue *userError
	if errors.As(err, &ue) {
		return ue.err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "file is not a database"):
		return &DBError{Path: s.path, Err: fmt.Errorf("not a SQLite database: %w", err)}
	case strings.Contains(msg, "malformed"), strings.Contains(msg, "corrupt"):
		return &DBError{Path: s.path, Err: fmt.Errorf("database is corrupt: %w", err)}
	}
	return &DBError{Path: s.path, Err: err}
}

// SchemaVersion is the number of migrations this loom knows.
func SchemaVersion() int { return len(migrations) }

func (s *SQLite) migrate(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Read first, so a read-only render of an up-to-date file never takes
	// the write lock.
	v, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if v == len(migrations) {
		return nil
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this loom knows (%d)", v, len(migrations))
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	// Another process may have migrated while this one waited for the lock.
	var cur sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&cur); err != nil {
		return err
	}
	for i := int(cur.Int64); i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, len(migrations)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *SQLite) schemaVersion(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// BusyError is a write that found the database locked by another writer
// for longer than the store's bound. It never carries SQLite's own words.
type BusyError struct {
	Path   string
	Waited time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s: the memory database stayed busy with another writer for %s (a long import?); nothing was written, try again", e.Path, e.Waited.Round(time.Millisecond))
}

// Unwrap makes a BusyError match [ErrUnavailable]: the store is there but
// cannot take the write now.
func (e *BusyError) Unwrap() error { return ErrUnavailable }

// isBusy says whether err is SQLite's "database is locked" or "table is
// locked", which a later try may not meet.
func isBusy(err error) bool {
	if err == nil {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// retry runs fn until it does not fail on a locked database, waiting a
// little longer each time, for at most busyWait; then it gives a
// *[BusyError]. fn must be safe to run again: each try is one transaction,
// rolled back when it fails.
func (s *SQLite) retry(ctx context.Context, fn func() error) error {
	start := time.Now()
	pause := 5 * time.Millisecond
	for {
		err := fn()
		if !isBusy(err) {
			return err
		}
		waited := time.Since(start)
		if waited >= s.busyWait {
			return &BusyError{Path: s.path, Waited: waited}
		}
		pause = min(pause*2, 250*time.Millisecond, s.busyWait-waited)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}

// Add implements [Store]. Each content is normalised (see [Normalize]) and
// each category checked against the store's categories before anything is
// written. A supersede follows the scope rule (see [ScopeError]).
func (s *SQLite) Add(ctx context.Context, ms ...NewMemory) ([]Memory, error) {
	out, err := CheckAdd(s.cats, ms)
	if err != nil {
		return nil, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Stamped under the lock: created_at follows commit order, and the
	// clock and id source need not be safe for concurrent use.
	for i := range out {
		out[i].ID = s.newID()
		out[i].CreatedAt = s.now().UTC()
	}
	if err := CheckBatchLinks(out, ms); err != nil {
		return nil, err
	}
	err = s.retry(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for i, n := range ms {
			if err := insert(ctx, tx, out[i]); err != nil {
				return err
			}
			if n.Supersedes == "" {
				continue
			}
			res, err := tx.ExecContext(ctx, `UPDATE memories SET superseded_by = ? WHERE id = ? AND superseded_by = '' AND forgotten = 0 AND user = ?`, out[i].ID, n.Supersedes, n.User)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k == 0 {
				return s.supersedeErr(ctx, tx, n.Supersedes, n.User)
			}
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, s.dbErr(err)
	}
	return out, nil
}

// supersedeErr says why id could not be superseded by a memory of user's
// scope.
func (s *SQLite) supersedeErr(ctx context.Context, tx *sql.Tx, id, user string) error {
	var by, owner string
	var forgotten bool
	err := tx.QueryRowContext(ctx, `SELECT superseded_by, forgotten, user FROM memories WHERE id = ?`, id).Scan(&by, &forgotten, &owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return &userError{fmt.Errorf("supersedes %q: %w", id, ErrNotFound)}
	case err != nil:
		return err
	}
	return &userError{SupersedeReason(id, by, forgotten, owner, user)}
}

// ErrCannotSupersede is wrapped by the refusals of a supersede whose target
// exists but is already superseded or forgotten: the caller's input, not a
// fault of the store.
var ErrCannotSupersede = errors.New("memory cannot be superseded")

// SupersedeReason words why a stored memory (superseded by supersededBy,
// forgotten, of owner's scope) could not be superseded by a memory of
// user's scope. Stores share it so their errors read the same.
func SupersedeReason(id, supersededBy string, forgotten bool, owner, user string) error {
	switch {
	case supersededBy != "":
		return fmt.Errorf("supersedes %q: already superseded by %q: %w", id, supersededBy, ErrCannotSupersede)
	case forgotten:
		return fmt.Errorf("supersedes %q: memory was forgotten: %w", id, ErrCannotSupersede)
	case owner != user:
		return &ScopeError{ID: id, OwnerUser: owner, ByUser: user}
	}
	return fmt.Errorf("supersedes %q: not updated: %w", id, ErrCannotSupersede)
}

// userError is a refusal about the caller's input found inside a
// transaction; dbErr passes it through without naming the file.
type userError struct{ err error }

func (e *userError) Error() string { return e.err.Error() }
func (e *userError) Unwrap() error { return e.err }

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

const insertSQL = `INSERT INTO memories (id, category, content, user, chat, created_s, created_ns, superseded_by, forgotten) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

func insert(ctx context.Context, tx execer, m Memory) error {
	_, err := tx.ExecContext(ctx, insertSQL,
		m.ID, m.Category, m.Content, m.User, m.Chat, m.CreatedAt.Unix(), m.CreatedAt.Nanosecond(), m.SupersededBy, m.Forgotten)
	return err
}

// List implements [Store]. A Query.User other than "" selects that user's
// memories and the workspace-wide ones, which apply to every user.
func (s *SQLite) List(ctx context.Context, q Query) ([]Memory, error) {
	var (
		where []string
		args  []any
	)
	if !q.All {
		where = append(where, `superseded_by = '' AND forgotten = 0`)
	}
	if !q.AllUsers {
		if q.User == "" {
			where = append(where, `user = ''`)
		} else {
			where = append(where, `user IN ('', ?)`)
			args = append(args, q.User)
		}
	}
	if q.ExcludeChat != "" {
		where = append(where, `chat <> ?`)
		args = append(args, q.ExcludeChat)
	}
	// Only the columns the WHERE clause leaves open are read: a render
	// lists thousands of rows, and each column read costs a call into
	// SQLite and a conversion. The others hold what the clause says.
	cols := `id, category, content, chat, created_s, created_ns`
	withUser := q.AllUsers || q.User != "" // else every row's user is ''
	if withUser {
		cols += `, user`
	}
	if q.All { // else every row is active: superseded_by '' and forgotten 0
		cols += `, superseded_by, forgotten`
	}
	// A render's listing may be kept beside the database (listcache.go):
	// it is then read with the change counter, from the same snapshot.
	keep := cacheable(q)
	if keep {
		if out, ok := s.cachedList(ctx); ok {
			return out, nil
		}
		cols += `, (SELECT db || ':' || n FROM changes)`
	}
	query := `SELECT ` + cols + ` FROM memories`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += ` ORDER BY created_s DESC, created_ns DESC, seq DESC`
	var out []Memory
	var ver string
	err := s.retry(ctx, func() error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var m Memory
		var sec, nsec int64
		dest := []any{&m.ID, &m.Category, &m.Content, &m.Chat, &sec, &nsec}
		if withUser {
			dest = append(dest, &m.User)
		}
		if q.All {
			dest = append(dest, &m.SupersededBy, &m.Forgotten)
		}
		if keep {
			dest = append(dest, &ver)
		}
		for rows.Next() {
			m = Memory{}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			m.CreatedAt = time.Unix(sec, nsec).UTC()
			out = append(out, m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.dbErr(err)
	}
	if keep && ver != "" {
		s.saveList(ver, out)
	}
	return out, nil
}

// Forget implements [Store]. Forgetting a forgotten memory is not an error.
func (s *SQLite) Forget(ctx context.Context, id string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err := s.retry(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE memories SET forgotten = 1 WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return &userError{fmt.Errorf("forget %q: %w", id, ErrNotFound)}
		}
		return nil
	})
	return s.dbErr(err)
}

// ImportError is an invalid memory in an import; Index counts from 0 in
// the slice given to Import.
type ImportError struct {
	Index int
	ID    string
	Err   error
}

func (e *ImportError) Error() string {
	if e.ID != "" {
		return fmt.Sprintf("memory %q: %v", e.ID, e.Err)
	}
	return e.Err.Error()
}

func (e *ImportError) Unwrap() error { return e.Err }

// MaxImport is the most memories one Import takes, as a slice held in
// memory; [Streamer.ImportFrom] has no such bound.
const MaxImport = 1_000_000

// Import implements [Store]. Ids, times, users, chats and superseded_by
// are kept; content is normalised and a missing created_at becomes now. An
// id that is missing, repeated or already stored, an unknown category, a
// time outside the years 0000–9999, a superseded_by that names no memory,
// names a memory of another scope, or closes a loop fails the whole import
// with an *[ImportError] (see [PrepareImport] and [CheckImportLinks]).
//
// It is ImportFrom over ms (see stream.go): the memories are checked and
// staged before the write lock is taken; the insert is one transaction, so
// other writers wait for it (up to their bound) rather than see part of
// it. PostgreSQL's store stages its imports the same way; PrepareImport
// and CheckImportLinks are the reference the tests hold both to.
func (s *SQLite) Import(ctx context.Context, ms []Memory) error {
	if len(ms) > MaxImport {
		return fmt.Errorf("import of %d memories: the limit is %d", len(ms), MaxImport)
	}
	_, err := s.ImportFrom(ctx, SliceSource(ms))
	return err
}
