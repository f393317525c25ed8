package session

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/loomctx/loom/messages"
)

// State is a session as saved: its messages, the consolidation pointer and
// the metadata record.
type State struct {
	Key       string
	CreatedAt time.Time
	UpdatedAt time.Time
	// LastConsolidated is how many leading messages are already in the
	// memory files; they are no longer replayed.
	LastConsolidated int
	Messages         []messages.Message
	// Meta holds metadata keys loom does not know (nanobot's "metadata"
	// object among them), kept as they came.
	Meta map[string]json.RawMessage
}

// Unconsolidated returns the messages after the pointer.
func (s *State) Unconsolidated() []messages.Message {
	last := min(max(s.LastConsolidated, 0), len(s.Messages))
	return s.Messages[last:]
}

// Store keeps sessions. Every method is one atomic step against other
// writers of the same session, in this process and in others: a writer
// re-reads under its lock and appends or merges, never writes back a stale
// copy. Implementations are safe for concurrent use.
//
// FileStore keeps them as JSONL files (loom's and nanobot's format); a
// database store implements the same four steps.
type Store interface {
	// Load returns the session key as saved. A session never saved is an
	// empty State with that key, not an error.
	Load(ctx context.Context, key string) (*State, error)
	// Append adds msgs at the end of the session, creating it if needed,
	// in one step: another writer's messages never land between them.
	Append(ctx context.Context, key string, msgs ...messages.Message) error
	// MoveConsolidated moves the pointer from `from` to `to` (forward
	// only, at most to the last message). If the pointer is no longer at
	// `from`, someone else consolidated meanwhile: nothing changes and the
	// error matches ErrPointerMoved.
	MoveConsolidated(ctx context.Context, key string, from, to int) error
	// Trim drops the first n messages (those /new archived) and sets the
	// pointer to 0; messages appended after them stay.
	Trim(ctx context.Context, key string, n int) error
	// Close releases what the store holds.
	Close() error
}

// TurnLocker is a Store that can hold one session's turns to one at a
// time across processes or replicas (PGStore does, with an advisory lock).
// Session.Turn and Session.New hold it for the whole turn when the store
// has it. FileStore does not: two processes on one session file each
// append their turns whole, and neither waits for the other's model call.
type TurnLocker interface {
	LockTurn(ctx context.Context, key string) (unlock func(), err error)
}

// PointerReader is a Store that reads a session's consolidation pointer
// without loading its messages (FileStore reads the metadata record,
// PGStore one column). The pointer may be past the messages left; what
// matters to its readers is whether it is 0.
type PointerReader interface {
	Pointer(ctx context.Context, key string) (int, error)
}

// consolidatedPointer is key's consolidation pointer, read cheaply when
// store can.
func consolidatedPointer(ctx context.Context, store Store, key string) (int, error) {
	if pr, ok := store.(PointerReader); ok {
		return pr.Pointer(ctx, key)
	}
	st, err := store.Load(ctx, key)
	if err != nil {
		return 0, err
	}
	return st.LastConsolidated, nil
}

// ErrPointerMoved says the consolidation pointer was moved by another
// writer since it was read.
var ErrPointerMoved = errors.New("the consolidation pointer was moved by another writer")

// CutKey is the Extra key that marks a reply saved partially: its value
// is the reason, a JSON string such as "interrupted", "signal: terminated"
// or the error that cut the stream.
const CutKey = "loom_cut"

// IsCut reports whether m is a reply that was cut before its end, and why.
func IsCut(m messages.Message) (reason string, ok bool) {
	raw, ok := m.Extra()[CutKey]
	if !ok {
		return "", false
	}
	if json.Unmarshal(raw, &reason) != nil {
		reason = string(raw)
	}
	return reason, true
}
