package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/loomctx/loom/memory"
)

// MemoryOption configures a [Memories] store.
type MemoryOption func(*Memories)

// WithNow sets the clock that stamps created_at; the default is time.Now.
func WithNow(now func() time.Time) MemoryOption {
	return func(s *Memories) {
		if now != nil {
			s.now = now
		}
	}
}

// WithCategories sets the categories Add and Import accept; the default
// is memory.DefaultCategories.
func WithCategories(cats []memory.Category) MemoryOption {
	return func(s *Memories) {
		if len(cats) > 0 {
			s.cats = cats
		}
	}
}

// WithIDs sets the function that makes new memory ids; the default is
// memory.NewID.
func WithIDs(newID func() string) MemoryOption {
	return func(s *Memories) {
		if newID != nil {
			s.newID = newID
		}
	}
}

// WithCache keeps List results until a change notice for the workspace
// (from any replica) drops them, while the DB is listening. A list on
// another replica within the notice's delay (well under a millisecond to
// a few on a local network; see the freshness test's log) may still be the
// older one; without WithCache every List reads the database.
func WithCache() MemoryOption { return func(s *Memories) { s.cached = true } }

// withBeforeCommit runs hook inside every write transaction just before
// COMMIT; fault tests use it to cut the connection mid-write.
func withBeforeCommit(hook func(ctx context.Context, tx pgx.Tx)) MemoryOption {
	return func(s *Memories) { s.beforeCommit = hook }
}

// Memories is the [memory.Store] of one workspace in PostgreSQL, with the
// SQLite store's semantics (the shared rules live in package memory:
// [memory.CheckAdd], [memory.PrepareImport], [memory.CheckImportLinks]).
// Every write notifies [Channel] in its transaction. With [WithCache],
// List results are cached while the DB is listening, and dropped when a
// notification for the workspace arrives (from this replica or another).
type Memories struct {
	db           *DB
	workspace    string
	now          func() time.Time
	cats         []memory.Category
	newID        func() string
	beforeCommit func(context.Context, pgx.Tx)
	stampMu      sync.Mutex
	cached       bool

	cmu   sync.Mutex
	gen   uint64 // bumped by every invalidation
	cache map[memory.Query][]memory.Memory
	seen  map[string]int64 // FreshVersion's last answer per user
	off   func()

	// vectors is Nearest's copy of the workspace's vectors.
	vectors vectorCache
}

var _ memory.Store = (*Memories)(nil)

// Memory returns the memory store of workspace (any stable name: the
// workspace folder's path, a tenant id). Close it when done; the DB stays
// open.
func (db *DB) Memory(workspace string, opts ...MemoryOption) *Memories {
	s := &Memories{db: db, workspace: workspace, now: time.Now, cats: memory.DefaultCategories, newID: memory.NewID,
		cache: map[memory.Query][]memory.Memory{}}
	for _, o := range opts {
		o(s)
	}
	s.off = db.OnChange(func(ws, user string) {
		if ws == "" || ws == workspace {
			s.invalidate(user, ws == "")
		}
	})
	return s
}

// Version says whether the workspace's memories may have changed: it
// grows with every change notice for the workspace (from any replica) and
// with every write through this store. ok is false while the DB is not
// listening, when notices can be missed: then a caller must read again.
// A render cache (the prompt's memory section, say) keys on it, as the
// SQLite store's callers key on the database file's size and time.
func (s *Memories) Version() (v uint64, ok bool) {
	s.cmu.Lock()
	v = s.gen
	s.cmu.Unlock()
	return v, s.db.Listening()
}

// Workspace is the name the store's rows are kept under.
func (s *Memories) Workspace() string { return s.workspace }

// Close stops the store's cache from listening. It does not close the DB.
func (s *Memories) Close() error {
	s.off()
	return nil
}

// invalidate drops cached lists that may hold user's memories: all of
// them for a workspace-wide change or when everything may have changed.
func (s *Memories) invalidate(user string, everything bool) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	s.gen++
	for q := range s.cache {
		if everything || user == "" || q.AllUsers || q.User == user {
			delete(s.cache, q)
		}
	}
}

// userErr is a refusal about the caller's input, found inside a
// transaction: never retried, returned as it is.
type userErr struct{ err error }

func (e *userErr) Error() string { return e.err.Error() }
func (e *userErr) Unwrap() error { return e.err }

// write runs fn in a transaction, notifying the changed users in it, and
// retries when the connection drops. A failure before COMMIT was sent is
// always safe to retry (the server rolls the transaction back). When the
// COMMIT itself is lost, committed says whether it took effect, so an
// acknowledged write is stored exactly once.
func (s *Memories) write(ctx context.Context, fn func(tx pgx.Tx) (users []string, err error), committed func(ctx context.Context) (bool, error)) error {
	var last error
	for attempt := 0; attempt < writeAttempts; attempt++ {
		if err := pauseBefore(ctx, attempt); err != nil {
			return err
		}
		users, commitSent, err := s.runTx(ctx, s.db.pool.Begin, fn)
		if err == nil {
			for _, u := range users {
				s.invalidate(u, false)
			}
			return nil
		}
		var ue *userErr
		if errors.As(err, &ue) {
			return ue.err
		}
		if !isConnErr(err) {
			return err
		}
		last = err
		if commitSent && !pgconn.SafeToRetry(err) && committed != nil {
			ok, cerr := committed(ctx)
			if cerr == nil && ok {
				for _, u := range users {
					s.invalidate(u, false)
				}
				return nil
			}
			if cerr != nil {
				last = cerr
				continue
			}
		}
	}
	return fmt.Errorf("memory: PostgreSQL: %w: %v", ErrUnavailable, last)
}

// writeAttempts is how many times a write is tried when the connection
// drops.
const writeAttempts = 3

// pauseBefore waits before attempt (none before the first, then 100 ms
// more each time), or returns ctx's error if it ends first.
func pauseBefore(ctx context.Context, attempt int) error {
	if attempt == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		return nil
	}
}

// runTx is one attempt of write: fn in a transaction begun by begin,
// the changed users' versions bumped and notified in it, then COMMIT.
// commitSent says whether COMMIT went out.
func (s *Memories) runTx(ctx context.Context, begin func(context.Context) (pgx.Tx, error), fn func(tx pgx.Tx) ([]string, error)) (users []string, commitSent bool, err error) {
	tx, err := begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback(context.Background())
	users, err = fn(tx)
	if err != nil {
		return nil, false, err
	}
	seen := map[string]bool{}
	var payloads []string
	for _, u := range users {
		if !seen[u] {
			seen[u] = true
			payloads = append(payloads, s.workspace+"\x1f"+u)
		}
	}
	if len(payloads) > 0 {
		if err := bumpVersions(ctx, tx, s.workspace, users); err != nil {
			return nil, false, err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, Channel, payloads); err != nil {
			return nil, false, err
		}
	}
	if s.beforeCommit != nil {
		s.beforeCommit(ctx, tx)
	}
	return users, true, tx.Commit(ctx)
}

// Add implements [memory.Store].
func (s *Memories) Add(ctx context.Context, ms ...memory.NewMemory) ([]memory.Memory, error) {
	out, err := memory.CheckAdd(s.cats, ms)
	if err != nil {
		return nil, err
	}
	s.stampMu.Lock()
	for i := range out {
		out[i].ID = s.newID()
		out[i].CreatedAt = s.now().UTC()
	}
	s.stampMu.Unlock()
	if err := memory.CheckBatchLinks(out, ms); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	err = s.write(ctx, func(tx pgx.Tx) ([]string, error) {
		// One round trip for the whole batch: the inserts and supersedes
		// in order, each supersede's row count read afterwards.
		var users []string
		b := &pgx.Batch{}
		for i, n := range ms {
			m := out[i]
			b.Queue(insertSQL, s.workspace, m.ID, m.Category, m.Content, m.User, m.Chat, m.CreatedAt.Unix(), m.CreatedAt.Nanosecond(), "", false)
			users = append(users, m.User)
			if n.Supersedes != "" {
				b.Queue(`UPDATE loom_memories SET superseded_by = $1
					WHERE workspace = $2 AND id = $3 AND superseded_by = '' AND NOT forgotten AND user_id = $4`,
					m.ID, s.workspace, n.Supersedes, n.User)
			}
		}
		br := tx.SendBatch(ctx, b)
		for _, n := range ms {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return nil, err
			}
			if n.Supersedes == "" {
				continue
			}
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return nil, err
			}
			if tag.RowsAffected() == 0 {
				if err := br.Close(); err != nil {
					return nil, err
				}
				return nil, s.supersedeErr(ctx, tx, n.Supersedes, n.User)
			}
		}
		if err := br.Close(); err != nil {
			return nil, err
		}
		return users, nil
	}, func(ctx context.Context) (bool, error) {
		var ok bool
		err := s.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM loom_memories WHERE workspace = $1 AND id = $2)`, s.workspace, out[0].ID).Scan(&ok)
		return ok, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

const insertSQL = `INSERT INTO loom_memories (workspace, id, category, content, user_id, chat, created_s, created_ns, superseded_by, forgotten)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

func (s *Memories) supersedeErr(ctx context.Context, tx pgx.Tx, id, user string) error {
	var by, owner string
	var forgotten bool
	err := tx.QueryRow(ctx, `SELECT superseded_by, forgotten, user_id FROM loom_memories WHERE workspace = $1 AND id = $2`, s.workspace, id).Scan(&by, &forgotten, &owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return &userErr{fmt.Errorf("supersedes %q: %w", id, memory.ErrNotFound)}
	case err != nil:
		return err
	}
	return &userErr{memory.SupersedeReason(id, by, forgotten, owner, user)}
}

// List implements [memory.Store].
func (s *Memories) List(ctx context.Context, q memory.Query) ([]memory.Memory, error) {
	listening := s.cached && s.db.Listening()
	s.cmu.Lock()
	gen := s.gen
	if listening {
		if ms, ok := s.cache[q]; ok {
			s.cmu.Unlock()
			return append([]memory.Memory(nil), ms...), nil
		}
	}
	s.cmu.Unlock()
	where := `workspace = $1`
	args := []any{s.workspace}
	if !q.All {
		where += ` AND superseded_by = '' AND NOT forgotten`
	}
	if !q.AllUsers {
		if q.User == "" {
			where += ` AND user_id = ''`
		} else {
			args = append(args, q.User)
			where += fmt.Sprintf(` AND user_id IN ('', $%d)`, len(args))
		}
	}
	if q.ExcludeChat != "" {
		args = append(args, q.ExcludeChat)
		where += fmt.Sprintf(` AND chat <> $%d`, len(args))
	}
	rows, err := s.db.pool.Query(ctx, `SELECT id, category, content, user_id, chat, created_s, created_ns, superseded_by, forgotten
		FROM loom_memories WHERE `+where+` ORDER BY created_s DESC, created_ns DESC, seq DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	var out []memory.Memory
	for rows.Next() {
		var m memory.Memory
		var sec int64
		var nsec int32
		if err := rows.Scan(&m.ID, &m.Category, &m.Content, &m.User, &m.Chat, &sec, &nsec, &m.SupersededBy, &m.Forgotten); err != nil {
			rows.Close()
			return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
		}
		m.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	if listening {
		s.cmu.Lock()
		// Cached only if nothing was invalidated while the query ran.
		if s.gen == gen && s.db.Listening() {
			s.cache[q] = append([]memory.Memory(nil), out...)
		}
		s.cmu.Unlock()
	}
	return out, nil
}

// Forget implements [memory.Store].
func (s *Memories) Forget(ctx context.Context, id string) error {
	return s.write(ctx, func(tx pgx.Tx) ([]string, error) {
		var user string
		err := tx.QueryRow(ctx, `UPDATE loom_memories SET forgotten = true WHERE workspace = $1 AND id = $2 RETURNING user_id`, s.workspace, id).Scan(&user)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, &userErr{fmt.Errorf("forget %q: %w", id, memory.ErrNotFound)}
		}
		if err != nil {
			return nil, err
		}
		return []string{user}, nil
	}, nil) // forgetting is idempotent: a lost COMMIT is simply retried
}

// Import implements [memory.Store]: ImportFrom over ms (see stream.go),
// within memory.MaxImport, as SQLite's store does. It holds ms, so, as
// the store's other writes, it is tried again when the connection drops;
// when a COMMIT was lost, the first memory being stored says it took
// effect (the import stored none of its ids before, and is all or
// nothing).
func (s *Memories) Import(ctx context.Context, ms []memory.Memory) error {
	if len(ms) > memory.MaxImport {
		return fmt.Errorf("import of %d memories: the limit is %d", len(ms), memory.MaxImport)
	}
	var last error
	for attempt := 0; attempt < writeAttempts; attempt++ {
		if err := pauseBefore(ctx, attempt); err != nil {
			return err
		}
		_, commitSent, err := s.importFrom(ctx, memory.SliceSource(ms))
		if err == nil || !isConnErr(err) {
			return s.importErr(err)
		}
		last = err
		if commitSent && !pgconn.SafeToRetry(err) {
			var in bool
			cerr := s.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM loom_memories WHERE workspace = $1 AND id = $2)`, s.workspace, ms[0].ID).Scan(&in)
			if cerr == nil && in {
				s.invalidate("", true)
				return nil
			}
		}
	}
	return fmt.Errorf("memory: PostgreSQL: %w: %v", ErrUnavailable, last)
}

// MemoryFile returns user's MEMORY.md as consolidation keeps it in the
// database ("" user: the workspace's own); ok is false when none was
// written. A prompt shows it in place of the workspace's memory/MEMORY.md,
// and a consolidation's change notice moves [Memories.Version].
func (s *Memories) MemoryFile(ctx context.Context, user string) (text string, ok bool, err error) {
	return s.db.Sessions(s.workspace).ReadFile(ctx, user, MemoryFileName)
}

// bumpVersions adds one to the change counter of each user (see
// [Memories.FreshVersion]) inside tx. Users are taken in sorted order, so
// two writers never wait for each other's rows in opposite orders.
func bumpVersions(ctx context.Context, tx pgx.Tx, workspace string, users []string) error {
	us := slices.Clone(users)
	slices.Sort(us)
	us = slices.Compact(us)
	_, err := tx.Exec(ctx, `INSERT INTO loom_memory_versions (workspace, user_id, v)
		SELECT $1, u, 1 FROM unnest($2::text[]) AS u
		ON CONFLICT (workspace, user_id) DO UPDATE SET v = loom_memory_versions.v + 1`, workspace, us)
	return err
}

// FreshVersion reads, in one lookup, the database's change counter of
// what a prompt for user holds: user's memories and MEMORY.md and the
// workspace-wide ones. It grows with every committed change, so a render
// that finds it unchanged may reuse what it built, and a write
// acknowledged by any replica before the call is always seen, without
// waiting for its change notice. When it has grown since this store last
// looked, the store's cached lists for user are dropped first.
func (s *Memories) FreshVersion(ctx context.Context, user string) (uint64, error) {
	var v int64
	err := s.db.pool.QueryRow(ctx, `SELECT coalesce(sum(v), 0)::bigint FROM loom_memory_versions
		WHERE workspace = $1 AND user_id IN ('', $2)`, s.workspace, user).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("memory: PostgreSQL: %w", unavailable(err))
	}
	s.cmu.Lock()
	if s.seen == nil {
		s.seen = map[string]int64{}
	}
	old, known := s.seen[user]
	s.seen[user] = max(old, v)
	s.cmu.Unlock()
	if !known || v > old { // a first look cannot tell what the cache missed
		s.invalidate(user, false)
	}
	return uint64(v), nil
}
