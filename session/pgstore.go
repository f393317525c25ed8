package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/messages"
)

// PGStore keeps sessions in PostgreSQL, so that any replica of a server
// can serve any session: messages in order (an Append is one transaction
// on the session's row, never interleaved with another), the
// consolidation pointer beside them, and a per-session lock for whole
// turns ([PGStore.LockTurn]). It is the server option; files
// ([FileStore]) stay the default.
type PGStore struct {
	s   *pgstore.Sessions
	db  *pgstore.DB
	own bool
}

var (
	_ Store         = (*PGStore)(nil)
	_ TurnLocker    = (*PGStore)(nil)
	_ TurnAppender  = (*PGStore)(nil)
	_ PointerReader = (*PGStore)(nil)
)

// NewPGStore returns the sessions of workspace (see pgstore.WorkspaceKey)
// in db. Close leaves db open: the caller shares it with the memory store.
func NewPGStore(db *pgstore.DB, workspace string) *PGStore {
	return &PGStore{s: db.Sessions(workspace), db: db}
}

// OpenPGStore connects to the PostgreSQL at dsn for workspace's sessions;
// Close closes the connection pool too.
func OpenPGStore(ctx context.Context, dsn, workspace string) (*PGStore, error) {
	db, err := pgstore.Open(ctx, dsn, pgstore.WithoutListen())
	if err != nil {
		return nil, err
	}
	st := NewPGStore(db, workspace)
	st.own = true
	return st, nil
}

// Load implements [Store].
func (p *PGStore) Load(ctx context.Context, key string) (*State, error) {
	st, err := p.s.Load(ctx, key)
	if err != nil {
		return nil, err
	}
	return &State{Key: key, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, LastConsolidated: st.Consolidated, Messages: st.Messages}, nil
}

// Append implements [Store].
func (p *PGStore) Append(ctx context.Context, key string, msgs ...messages.Message) error {
	return p.s.Append(ctx, key, msgs...)
}

// Pointer implements [PointerReader].
func (p *PGStore) Pointer(ctx context.Context, key string) (int, error) {
	return p.s.Pointer(ctx, key)
}

// AppendTurn implements [TurnAppender].
func (p *PGStore) AppendTurn(ctx context.Context, key, id string, msgs ...messages.Message) (bool, error) {
	return p.s.AppendTurn(ctx, key, id, msgs...)
}

// MoveConsolidated implements [Store].
func (p *PGStore) MoveConsolidated(ctx context.Context, key string, from, to int) error {
	return pointerErr(p.s.MoveConsolidated(ctx, key, from, to))
}

// Consolidated moves the pointer from `from` to `to` and, in the same
// transaction, replaces user's MEMORY.md with memory and appends
// historyEntry to HISTORY.md, all kept in the database: a consolidation
// is stored whole or not at all, and of two replicas consolidating the
// same messages one finds the pointer moved (ErrPointerMoved).
func (p *PGStore) Consolidated(ctx context.Context, key, user string, from, to int, memory, historyEntry string) error {
	return pointerErr(p.s.Consolidate(ctx, key, from, to, pgstore.MemoryFiles{User: user, Memory: memory, HistoryAppend: historyEntry}))
}

// MemoryFile returns user's MEMORY.md or HISTORY.md as kept in the
// database (name is "MEMORY.md" or "HISTORY.md").
func (p *PGStore) MemoryFile(ctx context.Context, user, name string) (string, bool, error) {
	return p.s.ReadFile(ctx, user, name)
}

// Trim implements [Store].
func (p *PGStore) Trim(ctx context.Context, key string, n int) error {
	return p.s.Trim(ctx, key, n)
}

// LockTurn implements [TurnLocker]: it takes key's lock across every
// replica and returns its release. Session.Turn and Session.New hold it,
// so two replicas serving one session take its turns one after the other.
// A replica that dies holding it loses its connection, and the server
// frees the lock. It is not re-entrant: a holder that asks again for the
// same key (calling Turn inside its own LockTurn, say) waits until ctx
// ends.
func (p *PGStore) LockTurn(ctx context.Context, key string) (unlock func(), err error) {
	return p.s.Lock(ctx, key)
}

// Close implements [Store].
func (p *PGStore) Close() error {
	if p.own {
		return p.db.Close()
	}
	return nil
}

// pointerErr makes the database's "pointer moved" match ErrPointerMoved.
func pointerErr(err error) error {
	if err != nil && errors.Is(err, pgstore.ErrPointerMoved) && !errors.Is(err, ErrPointerMoved) {
		return fmt.Errorf("%v: %w", err, ErrPointerMoved)
	}
	return err
}

// MemoryFiles returns user's memory files (MEMORY.md, HISTORY.md) as
// consolidation sees them when sessions are in PostgreSQL: kept in the
// database, one pair per workspace and user. What a consolidation writes
// is held back until [Consolidate] stores it, in the one transaction that
// also moves the session's pointer (or trims it, for /new), so a
// consolidation is stored whole or not at all, and of two replicas
// consolidating the same messages one finds the pointer moved and writes
// nothing. Their lock is an advisory lock per workspace and user.
//
// One PGFiles serves one consolidation at a time (Session holds one; the
// in-process lock queues others).
func (p *PGStore) MemoryFiles(user string) *PGFiles {
	return &PGFiles{p: p, user: user}
}

// PGFiles is a [consolidate.Files] kept in PostgreSQL; see
// [PGStore.MemoryFiles].
type PGFiles struct {
	p    *PGStore
	user string

	mu      sync.Mutex // held from Lock to unlock
	locked  bool
	memory  *string  // MEMORY.md as written during this run
	history []string // entries appended during this run
}

var _ consolidate.Files = (*PGFiles)(nil)

// pgFilesTimeout bounds a read of MEMORY.md (Files has no context).
const pgFilesTimeout = 30 * time.Second

// ReadMemory implements consolidate.Files: what this run wrote, else the
// database's.
func (f *PGFiles) ReadMemory() (string, error) {
	if f.memory != nil {
		return *f.memory, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgFilesTimeout)
	defer cancel()
	text, _, err := f.p.s.ReadFile(ctx, f.user, pgstore.MemoryFileName)
	return text, err
}

// WriteMemory implements consolidate.Files; the text is stored when the
// consolidation is.
func (f *PGFiles) WriteMemory(text string) error {
	if !f.locked {
		return errors.New("memory files in PostgreSQL are written only by a consolidation holding their lock")
	}
	f.memory = &text
	return nil
}

// AppendHistory implements consolidate.Files; the entry is stored when the
// consolidation is, as memory.AppendHistory writes it to a file.
func (f *PGFiles) AppendHistory(entry string) error {
	if !f.locked {
		return errors.New("memory files in PostgreSQL are written only by a consolidation holding their lock")
	}
	if entry = strings.TrimRight(entry, " \t\r\n"); entry != "" {
		f.history = append(f.history, entry+"\n\n")
	}
	return nil
}

// filesLockKey is the advisory lock of user's memory files; no session
// key has "//" in it.
func filesLockKey(user string) string { return "memory-files//" + user }

// Lock implements consolidate.Files: an advisory lock on the user's
// files, across replicas. A negative wait does not wait.
func (f *PGFiles) Lock(ctx context.Context, wait time.Duration) (func(), error) {
	f.mu.Lock()
	var release func()
	var err error
	if wait < 0 {
		var ok bool
		release, ok, err = f.p.s.TryLock(ctx, filesLockKey(f.user))
		if err == nil && !ok {
			err = fmt.Errorf("%w: another consolidation of user %q's memory files is running", errLockBusy, f.user)
		}
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		release, err = f.p.s.Lock(wctx, filesLockKey(f.user))
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w: user %q's memory files stayed locked for %s", errLockBusy, f.user, wait)
		}
	}
	if err != nil {
		f.mu.Unlock()
		return func() {}, err
	}
	f.locked, f.memory, f.history = true, nil, nil
	return func() {
		f.locked, f.memory, f.history = false, nil, nil
		release()
		f.mu.Unlock()
	}, nil
}

// commit stores what this run wrote with the pointer's move from `from`
// to `to`, or with the trim of the first `to` messages, in one
// transaction.
func (f *PGFiles) commit(ctx context.Context, key string, from, to int, trim bool) error {
	files := pgstore.MemoryFiles{User: f.user, HistoryAppend: strings.Join(f.history, "")}
	if f.memory != nil {
		files.Memory = *f.memory
	}
	var err error
	if trim {
		err = f.p.s.ArchiveAndTrim(ctx, key, from, to, files)
	} else {
		err = f.p.s.Consolidate(ctx, key, from, to, files)
	}
	if err == nil {
		f.memory, f.history = nil, nil
	}
	return pointerErr(err)
}
