package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loomctx/loom/internal/filelock"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/messages"
)

// ConsolidateOptions tune Consolidate.
type ConsolidateOptions struct {
	// All consolidates everything after the pointer, not only what passes
	// the threshold (what /new does before starting over).
	All bool
	// Trim drops the consolidated messages afterwards (with All: /new).
	Trim bool
	// DryRun reports what would be consolidated without calling the model
	// or writing anything.
	DryRun bool
	// LockWait bounds the wait for the memory files' lock; negative does
	// not wait at all (a background run skips when another is running).
	LockWait time.Duration

	// turnHeld says the caller holds the session's turn lock already
	// (Session.New does).
	turnHeld bool
}

// Report says what a consolidation did.
type Report struct {
	Messages    int                   `json:"messages"`
	Tokens      int                   `json:"unconsolidated_tokens"`
	Threshold   int                   `json:"threshold"`
	PointerFrom int                   `json:"pointer_from"`
	PointerTo   int                   `json:"pointer_to"`
	Outcomes    []consolidate.Outcome `json:"outcomes"`
	// SessionSaved tells whether the moved pointer (or the trim) was
	// written back.
	SessionSaved bool `json:"session_saved"`
	// DryRun marks a report of what would happen: nothing was written.
	DryRun bool `json:"dry_run,omitempty"`
}

var errLockBusy = filelock.ErrBusy

// Consolidate folds the unconsolidated part of session key into the memory
// files, holding their lock for the whole run: the session is read under
// it, MEMORY.md is read and written under it, and the pointer moves under
// the session's own lock only if no one moved it meanwhile. Two
// consolidations of one workspace never overlap, in one process or across
// processes; chat turns appended meanwhile are kept, since the session is
// only appended to or rewritten from what is on disk under its lock.
//
// When the store is PostgreSQL's (PGStore) and files are its memory files
// (PGStore.MemoryFiles), the run also holds the session's turn lock, the
// one every replica's turns take, and what it writes to MEMORY.md and
// HISTORY.md is stored in the same transaction that moves the pointer (or
// trims the session, for /new): all of it or none.
func Consolidate(ctx context.Context, store Store, key string, c *consolidate.Consolidator, files consolidate.Files, opts ConsolidateOptions) (Report, error) {
	var rep Report
	if !opts.DryRun && !opts.turnHeld {
		unlock, err := lockTurnFor(ctx, store, key, opts.LockWait)
		if err != nil {
			return rep, err
		}
		defer unlock()
	}
	if !opts.DryRun {
		unlock, err := files.Lock(ctx, opts.LockWait)
		if err != nil {
			return rep, fmt.Errorf("memory files: %w", err)
		}
		defer unlock()
	}
	st, err := store.Load(ctx, key)
	if err != nil {
		return rep, err
	}
	last := st.LastConsolidated
	rep = Report{
		Messages: len(st.Messages), Tokens: c.Tokens(st.Messages[last:]), Threshold: c.Threshold(),
		PointerFrom: last, PointerTo: last, Outcomes: []consolidate.Outcome{},
	}
	if opts.DryRun {
		rep.DryRun = true
		if opts.All {
			rep.PointerTo = len(st.Messages)
		} else if end, ok := c.Plan(st.Messages, last); ok {
			rep.PointerTo = end
		}
		return rep, nil
	}
	newLast := last
	var runErr error
	if opts.All {
		var out consolidate.Outcome
		out, runErr = c.Archive(ctx, st.Messages, last)
		rep.Outcomes = append(rep.Outcomes, out)
		if runErr == nil {
			newLast = len(st.Messages)
		}
	} else {
		var outs []consolidate.Outcome
		newLast, outs, runErr = c.Maybe(ctx, st.Messages, last)
		rep.Outcomes = append(rep.Outcomes, outs...)
	}
	// Saving the pointer outlives ctx: the memory files were written, and
	// a pointer left behind would consolidate the chunk twice.
	sctx := context.WithoutCancel(ctx)
	if pf, ok := files.(*PGFiles); ok {
		switch {
		case opts.Trim && runErr == nil:
			if err := pf.commit(sctx, key, last, len(st.Messages), true); err != nil {
				return rep, fmt.Errorf("start over: %w", err)
			}
			rep.SessionSaved, rep.PointerTo = true, 0
		case newLast != last:
			if err := pf.commit(sctx, key, last, newLast, false); err != nil {
				return rep, errors.Join(runErr, fmt.Errorf("save consolidation: %w", err))
			}
			rep.SessionSaved, rep.PointerTo = true, newLast
		}
		return rep, runErr
	}
	switch {
	case opts.Trim && runErr == nil:
		if err := store.Trim(sctx, key, len(st.Messages)); err != nil {
			return rep, errors.Join(runErr, fmt.Errorf("start over: %w", err))
		}
		rep.SessionSaved, rep.PointerTo = true, 0
	case newLast != last:
		if err := store.MoveConsolidated(sctx, key, last, newLast); err != nil {
			return rep, errors.Join(runErr, fmt.Errorf("save pointer: %w", err))
		}
		rep.SessionSaved, rep.PointerTo = true, newLast
	}
	return rep, runErr
}

// lockTurnFor holds the store's turn lock on key when it has one,
// waiting up to wait, or defaultTurnWait when wait is not positive: a
// background run is started by a turn that still holds the lock, and
// must wait for it rather than give up.
func lockTurnFor(ctx context.Context, store Store, key string, wait time.Duration) (func(), error) {
	tl, ok := store.(TurnLocker)
	if !ok {
		return func() {}, nil
	}
	if wait <= 0 {
		wait = defaultTurnWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	unlock, err := tl.LockTurn(wctx, key)
	if err != nil {
		if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: session %s stayed busy for %s", errLockBusy, key, wait)
		}
		return nil, fmt.Errorf("session %s: %w", key, err)
	}
	return unlock, nil
}

// defaultTurnWait bounds a consolidation's wait for the session's turn
// lock when its options set none.
const defaultTurnWait = 30 * time.Second

// ConsolidateFileOptions are the inputs of ConsolidateFile, the library
// side of `loom memory consolidate --history FILE`.
type ConsolidateFileOptions struct {
	ConsolidateOptions
	// Path is the session or history file: loom's, nanobot's, a plain
	// JSONL history or a JSON array (which becomes JSONL when its pointer
	// is saved).
	Path string
	// Consolidator and Files do the work.
	Consolidator *consolidate.Consolidator
	Files        consolidate.Files
}

// ConsolidateFile consolidates one session file; see Consolidate.
func ConsolidateFile(ctx context.Context, opts ConsolidateFileOptions) (Report, error) {
	f := &File{Path: opts.Path, LockWait: opts.LockWait}
	return Consolidate(ctx, fileAsStore{f}, "", opts.Consolidator, opts.Files, opts.ConsolidateOptions)
}

// fileAsStore is a single File seen as a Store of one session.
type fileAsStore struct{ f *File }

func (s fileAsStore) Load(ctx context.Context, _ string) (*State, error) { return s.f.Load(ctx) }
func (s fileAsStore) Append(ctx context.Context, _ string, msgs ...messages.Message) error {
	return s.f.Append(ctx, msgs...)
}
func (s fileAsStore) MoveConsolidated(ctx context.Context, _ string, from, to int) error {
	return s.f.MoveConsolidated(ctx, from, to)
}
func (s fileAsStore) Trim(ctx context.Context, _ string, n int) error { return s.f.Trim(ctx, n) }
func (s fileAsStore) Close() error                                    { return nil }
