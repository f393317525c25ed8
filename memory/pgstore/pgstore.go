// Package pgstore keeps loom's shared state in PostgreSQL, so that several
// `loom serve` replicas behind a load balancer see the same memories and
// sessions: a [memory.Store] per workspace ([DB.Memory]), the tables the
// session package's PostgreSQL store uses, and change notifications
// (LISTEN/NOTIFY) that tell every replica when a workspace's memories
// changed ([DB.OnChange]).
//
// One [DB] holds a pgxpool pool and one listening connection. Schema
// migrations are versioned and run at [Open] under an advisory lock, so
// replicas starting together migrate once; a database whose schema is
// newer than this loom is refused. The DSN is never logged nor put in an
// error.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/loomctx/loom/memory"
)

// Channel is the NOTIFY channel of memory changes. A payload is the
// workspace and the user whose memories changed, separated by U+001F; an
// empty user is the workspace-wide scope, which every user's prompt holds.
const Channel = "loom_memory"

// migrations are applied in order, each once. Never edit or reorder one
// that has shipped: append.
var migrations = []string{
	// 1: memories. Times are Unix seconds and nanoseconds, as in SQLite, so
	// years 0000–9999 round-trip exactly (timestamptz keeps microseconds).
	`CREATE TABLE loom_memories (
		seq           bigserial PRIMARY KEY,
		workspace     text    NOT NULL,
		id            text    NOT NULL,
		category      text    NOT NULL,
		content       text    NOT NULL,
		user_id       text    NOT NULL DEFAULT '',
		chat          text    NOT NULL DEFAULT '',
		created_s     bigint  NOT NULL,
		created_ns    integer NOT NULL CHECK (created_ns BETWEEN 0 AND 999999999),
		superseded_by text    NOT NULL DEFAULT '',
		forgotten     boolean NOT NULL DEFAULT false,
		UNIQUE (workspace, id)
	);
	CREATE INDEX loom_memories_active ON loom_memories (workspace, user_id, created_s DESC, created_ns DESC, seq DESC)
		WHERE superseded_by = '' AND NOT forgotten;
	CREATE INDEX loom_memories_created ON loom_memories (workspace, created_s DESC, created_ns DESC, seq DESC);`,
	// 2: sessions (see session.PGStore): one row per session holding the
	// consolidation pointer and the first kept message's number, its
	// messages one row each, and the memory files (MEMORY.md, HISTORY.md)
	// per workspace and user.
	`CREATE TABLE loom_sessions (
		workspace    text   NOT NULL,
		key          text   NOT NULL,
		consolidated bigint NOT NULL DEFAULT 0,
		base         bigint NOT NULL DEFAULT 0,
		next         bigint NOT NULL DEFAULT 0,
		PRIMARY KEY (workspace, key)
	);
	CREATE TABLE loom_session_messages (
		workspace text   NOT NULL,
		key       text   NOT NULL,
		n         bigint NOT NULL,
		message   json   NOT NULL, -- json, not jsonb: the text is kept as written
		PRIMARY KEY (workspace, key, n)
	);
	CREATE TABLE loom_memory_files (
		workspace text NOT NULL,
		user_id   text NOT NULL DEFAULT '',
		name      text NOT NULL,
		content   text NOT NULL,
		PRIMARY KEY (workspace, user_id, name)
	);`,
	// 3: when a session was created and last appended to.
	`ALTER TABLE loom_sessions
		ADD COLUMN created_at timestamptz NOT NULL DEFAULT now(),
		ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();`,
	// 4: a change counter per workspace and user, bumped in every
	// transaction that changes what that user's prompt holds (memories,
	// MEMORY.md), so a replica can tell at render time, in one lookup,
	// whether its cached memory section is still current.
	`CREATE TABLE loom_memory_versions (
		workspace text   NOT NULL,
		user_id   text   NOT NULL,
		v         bigint NOT NULL,
		PRIMARY KEY (workspace, user_id)
	);`,
	// 5: full-text search (Memories.Search): a tsvector of the content
	// (weight A) and the category (weight D), stemmed by the english
	// configuration, kept by PostgreSQL itself in the writing statement,
	// and computed for the rows already there; a GIN index finds the rows
	// that match.
	`ALTER TABLE loom_memories ADD COLUMN search tsvector GENERATED ALWAYS AS (
		setweight(to_tsvector('english'::regconfig, content), 'A') ||
		setweight(to_tsvector('english'::regconfig, category), 'D')) STORED;
	CREATE INDEX loom_memories_search ON loom_memories USING GIN (search);`,
	// 6: embedding vectors (memory.embeddings), one per memory and model,
	// as little-endian float32 (memory.EncodeVector), written after the
	// memory by a background worker; they go with their memory.
	`CREATE TABLE loom_memory_vectors (
		seq   bigint NOT NULL REFERENCES loom_memories (seq) ON DELETE CASCADE,
		model text   NOT NULL,
		vec   bytea  NOT NULL,
		PRIMARY KEY (seq, model)
	);`,
}

// WorkspaceKey is the name a workspace's rows are kept under: the value
// of LOOM_PG_WORKSPACE when the operator sets it (replicas that mount the
// workspace at different paths set the same name), else the folder's
// absolute path.
func WorkspaceKey(root string) string {
	if v := os.Getenv("LOOM_PG_WORKSPACE"); v != "" {
		return v
	}
	if abs, err := filepath.Abs(root); err == nil {
		return abs
	}
	return filepath.Clean(root)
}

// SchemaVersion is the number of migrations this loom knows.
func SchemaVersion() int { return len(migrations) }

// ErrUnavailable is wrapped by errors that say PostgreSQL could not be
// reached or dropped the connection; a server answers them with 503. It
// is memory.ErrUnavailable, so callers need not import this package.
var ErrUnavailable = memory.ErrUnavailable

// Option configures [Open].
type Option func(*config)

type config struct {
	maxConns  int32
	lockConns int32
	listen    bool
}

// WithLockConns bounds the connections that hold session locks (see
// [Sessions.Lock]); the default is 32. They are a pool of their own, so a
// replica holding many locks never starves its work of connections.
func WithLockConns(n int32) Option { return func(c *config) { c.lockConns = n } }

// WithMaxConns bounds the pool; the default is pgxpool's.
func WithMaxConns(n int32) Option { return func(c *config) { c.maxConns = n } }

// WithoutListen opens the DB without its listening connection: no
// [DB.OnChange] callbacks and no cached lists. Tools that run once
// (import, export) use it.
func WithoutListen() Option { return func(c *config) { c.listen = false } }

// DB is one replica's handle on the shared database.
type DB struct {
	pool *pgxpool.Pool
	cfg  *pgxpool.Config
	// lockPool holds the connections that hold session locks: a lock is
	// held by its connection, and a waiter waits on one.
	lockPool *pgxpool.Pool

	mu        sync.Mutex
	listeners map[int]func(workspace, user string)
	nextL     int
	// listening is true while the listening connection is up; lists are
	// cached only then, since a change could otherwise go unheard.
	listening bool
	stop      context.CancelFunc
	done      chan struct{}
}

// Open connects to PostgreSQL, brings the schema up to date and, unless
// [WithoutListen], starts listening for changes.
func Open(ctx context.Context, dsn string, opts ...Option) (*DB, error) {
	c := config{listen: true}
	for _, o := range opts {
		o(&c)
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message can quote the DSN; this one never does.
		return nil, errors.New("pgstore: the PostgreSQL DSN does not parse (it is not shown, as it may hold a password)")
	}
	if c.maxConns > 0 {
		pcfg.MaxConns = c.maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, unavailable(err)
	}
	lcfg := pcfg.Copy()
	lcfg.MaxConns = 32
	if c.lockConns > 0 {
		lcfg.MaxConns = c.lockConns
	}
	lcfg.MinConns = 0
	lockPool, err := pgxpool.NewWithConfig(ctx, lcfg)
	if err != nil {
		pool.Close()
		return nil, unavailable(err)
	}
	db := &DB{pool: pool, lockPool: lockPool, cfg: pcfg, listeners: map[int]func(string, string){}}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		lockPool.Close()
		return nil, err
	}
	if c.listen {
		lctx, cancel := context.WithCancel(context.Background())
		db.stop = cancel
		db.done = make(chan struct{})
		ready := make(chan struct{})
		go db.listen(lctx, ready)
		select {
		case <-ready:
		case <-ctx.Done():
			db.Close()
			return nil, ctx.Err()
		}
	}
	return db, nil
}

// Pool is the connection pool, for the session package's store.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close stops listening and closes the pool.
func (db *DB) Close() error {
	if db.stop != nil {
		db.stop()
		<-db.done
	}
	db.pool.Close()
	db.lockPool.Close()
	return nil
}

func (db *DB) migrate(ctx context.Context) error {
	return unavailable(pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return migrateTx(ctx, tx) }))
}

func migrateTx(ctx context.Context, tx pgx.Tx) error {
	// One replica migrates; the others wait here, then find nothing to do.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('loom_schema'))`); err != nil {
		return unavailable(err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS loom_schema (version integer NOT NULL)`); err != nil {
		return unavailable(err)
	}
	var v *int32
	if err := tx.QueryRow(ctx, `SELECT max(version) FROM loom_schema`).Scan(&v); err != nil {
		return unavailable(err)
	}
	cur := 0
	if v != nil {
		cur = int(*v)
	}
	if cur > len(migrations) {
		return fmt.Errorf("pgstore: the database's loom schema is version %d, newer than this loom knows (%d); upgrade loom", cur, len(migrations))
	}
	if cur == len(migrations) {
		return nil
	}
	for i := cur; i < len(migrations); i++ {
		if _, err := tx.Exec(ctx, migrations[i]); err != nil {
			return fmt.Errorf("pgstore: migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM loom_schema`); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO loom_schema (version) VALUES ($1)`, len(migrations))
	return err
}

// OnChange calls fn after every change to a workspace's memories, made by
// this replica or any other, with the user whose memories changed ("" for
// workspace-wide ones, which concern every user). When the listening
// connection drops and comes back, changes may have been missed: fn is
// then called with workspace "" to say "anything may have changed". fn
// runs on the listening goroutine and must not block. The returned func
// removes fn.
func (db *DB) OnChange(fn func(workspace, user string)) (remove func()) {
	db.mu.Lock()
	defer db.mu.Unlock()
	id := db.nextL
	db.nextL++
	db.listeners[id] = fn
	return func() {
		db.mu.Lock()
		delete(db.listeners, id)
		db.mu.Unlock()
	}
}

func (db *DB) notify(workspace, user string) {
	db.mu.Lock()
	fns := make([]func(string, string), 0, len(db.listeners))
	for _, fn := range db.listeners {
		fns = append(fns, fn)
	}
	db.mu.Unlock()
	for _, fn := range fns {
		fn(workspace, user)
	}
}

// Listening reports whether change notifications are being received.
func (db *DB) Listening() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.listening
}

func (db *DB) setListening(on bool) {
	db.mu.Lock()
	db.listening = on
	db.mu.Unlock()
}

// listen keeps one connection LISTENing, reconnecting with a growing pause
// when it drops. Each (re)connection announces "anything may have
// changed", since notifications sent while it was down are lost.
func (db *DB) listen(ctx context.Context, ready chan struct{}) {
	defer close(db.done)
	pause := 50 * time.Millisecond
	once := sync.OnceFunc(func() { close(ready) })
	defer once()
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, db.cfg.ConnConfig.Copy())
		if err == nil {
			_, err = conn.Exec(ctx, `LISTEN `+Channel)
		}
		if err == nil {
			pause = 50 * time.Millisecond
			db.setListening(true)
			db.notify("", "")
			once()
			for {
				n, werr := conn.WaitForNotification(ctx)
				if werr != nil {
					break
				}
				ws, user, _ := strings.Cut(n.Payload, "\x1f")
				db.notify(ws, user)
			}
		}
		db.setListening(false)
		db.notify("", "")
		once()
		if conn != nil {
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			conn.Close(cctx)
			cancel()
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause = min(pause*2, 2*time.Second)
	}
}

// unavailable marks err as PostgreSQL being out of reach when it is a
// connection failure rather than an answer.
func unavailable(err error) error {
	if err == nil || !isConnErr(err) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// isConnErr says whether err means the server could not be reached or
// went away, as opposed to an answer (a constraint, a syntax error), a
// cancelled context or a refusal of loom's own.
func isConnErr(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exception; 57P01–57P03: the server is
		// shutting down, crashed or not accepting connections yet.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.SafeToRetry(err), pgconn.Timeout(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") || strings.Contains(msg, "connection reset")
}
