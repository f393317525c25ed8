package session

import (
	"context"
	"errors"
	"fmt"

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
	_ Store      = (*PGStore)(nil)
	_ TurnLocker = (*PGStore)(nil)
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
