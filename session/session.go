package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/extract"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// DefaultShutdownWait bounds Close when its context has no deadline.
const DefaultShutdownWait = 30 * time.Second

// Options open a session. Workspace, Key and Client are required.
type Options struct {
	// Workspace is the agent's workspace, opened once by the caller and
	// shared by everything the session reads.
	Workspace *workspace.Workspace
	// Builder renders the system prompt. Nil makes one on Workspace, which
	// Close closes; a front end serving many sessions passes its own.
	Builder *prompt.Builder
	// Prompt are the render options (channel, user, chat id, preset...).
	Prompt prompt.Options
	// Skills expands /name and $name in a user's message, as `loom
	// messages` does. Nil uses the builder's skills.
	Skills messages.SkillExpander
	// Counter counts tokens for the build report and the consolidation
	// threshold; nil means messages are not counted and consolidation is
	// off.
	Counter messages.Counter
	// Window is the model's context window in tokens and Reserve the
	// room kept for the reply (0: fit.DefaultReserve): a turn over
	// Window less Reserve leaves out its oldest history (package fit).
	// 0, or no Counter, means no fitting.
	Window  int
	Reserve int

	// Key names the session in the store.
	Key string
	// Channel, User and Location fill the runtime block of each message;
	// Placement puts it before or after the text.
	Channel   string
	User      string
	Location  *time.Location
	Placement messages.Placement

	// Store keeps the conversation. Nil means a FileStore under the
	// workspace's .loom/sessions/, which Close closes.
	Store Store
	// Client calls the model.
	Client llm.Client
	// Model overrides the client's model for replies.
	Model string

	// Extract feeds the memory store after each turn; nil turns
	// extraction off. A Worker passed here is shared: Close leaves it
	// running.
	Extract *extract.Worker
	// Consolidate folds old history into MEMORY.md and HISTORY.md once it
	// passes the threshold; nil turns consolidation off. Files defaults
	// to the workspace's memory files, Counter to the session's.
	Consolidate *consolidate.Options

	// LockWait bounds the wait for another writer of the session or of
	// the memory files; default 30s.
	LockWait time.Duration
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Session is one conversation. Its methods are safe for concurrent use:
// turns on one session (in this process, through any Session with the same
// workspace and key) run one at a time; turns on different sessions run in
// parallel.
type Session struct {
	opts    Options
	builder *prompt.Builder
	store   Store
	skills  messages.SkillExpander
	cons    *consolidate.Consolidator
	files   consolidate.Files
	logger  *slog.Logger
	ownB    bool
	ownS    bool
	turns   *keyLock

	mu       sync.Mutex // guards the fields below
	closed   bool
	busy     bool // a background consolidation is running
	bgWG     sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

// ErrClosed is returned by a Session used after Close.
var ErrClosed = errors.New("session is closed")

// Open opens the session opts.Key, creating nothing until the first turn is
// saved.
func Open(ctx context.Context, opts Options) (*Session, error) {
	if opts.Workspace == nil {
		return nil, errors.New("session: no workspace")
	}
	if opts.Key == "" {
		return nil, errors.New("session: no key")
	}
	if opts.Client == nil {
		return nil, errors.New("session: no model client")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LockWait <= 0 {
		opts.LockWait = 30 * time.Second
	}
	s := &Session{opts: opts, builder: opts.Builder, store: opts.Store, skills: opts.Skills, logger: opts.Logger}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.builder == nil {
		s.builder, s.ownB = prompt.New(opts.Workspace), true
	}
	if s.store == nil {
		s.store = NewWorkspaceFileStore(opts.Workspace, FileOptions{LockWait: opts.LockWait, Now: opts.Now})
		s.ownS = true
	}
	if s.skills == nil {
		set, err := s.builder.Skills()
		if err != nil {
			s.release()
			return nil, err
		}
		s.skills = SkillExpander(set)
	}
	if c := opts.Consolidate; c != nil {
		co := *c
		if co.Client == nil {
			co.Client = opts.Client
		}
		if co.Files == nil {
			co.Files = s.memoryFiles()
		}
		if co.Counter == nil {
			co.Counter = opts.Counter
		}
		if co.Now == nil {
			co.Now = opts.Now
		}
		if co.Logger == nil {
			co.Logger = s.logger
		}
		if co.Counter != nil {
			s.cons, s.files = consolidate.New(co), co.Files
		}
	}
	s.turns = lockFor(opts.Workspace.Root() + "\x00" + opts.Key)
	s.bgCtx, s.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	return s, nil
}

// Key is the session's key.
func (s *Session) Key() string { return s.opts.Key }

// Store is where the session is kept.
func (s *Session) Store() Store { return s.store }

// Builder is the prompt builder the session renders with.
func (s *Session) Builder() *prompt.Builder { return s.builder }

// lockTurn holds the store's cross-process turn lock, when it has one.
func (s *Session) lockTurn(ctx context.Context) (func(), error) {
	tl, ok := s.store.(TurnLocker)
	if !ok {
		return func() {}, nil
	}
	unlock, err := tl.LockTurn(ctx, s.opts.Key)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", s.opts.Key, err)
	}
	return unlock, nil
}

// savedText is the user's message as kept: the text as typed, and a
// placeholder per attached image (the image itself is not kept).
func savedText(in TurnInput) string {
	t := in.Text
	for range in.Media {
		if t != "" {
			t += "\n"
		}
		t += "[image]"
	}
	return t
}

// cutReason says why a reply stopped: ctx's cause when ctx ended, else the
// error.
func cutReason(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil && c != context.Canceled {
			return c.Error()
		}
		return "interrupted"
	}
	return err.Error()
}

// New archives what is not consolidated yet into the memory files (when
// consolidation is on) and starts the session over. If archiving fails the
// session is kept whole and the error says why.
func (s *Session) New(ctx context.Context) error {
	if err := s.turns.lock(ctx); err != nil {
		return err
	}
	defer s.turns.unlock()
	if s.isClosed() {
		return ErrClosed
	}
	// A background consolidation may be waiting for the turn lock: let
	// it finish before taking the lock (no new one starts while s.turns
	// is held).
	s.bgWG.Wait()
	unlock, err := s.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if s.cons == nil {
		return s.archiveRawAndTrim(ctx)
	}
	_, err = Consolidate(ctx, s.store, s.opts.Key, s.cons, s.files, ConsolidateOptions{All: true, Trim: true, LockWait: s.opts.LockWait, turnHeld: true})
	if err != nil {
		return fmt.Errorf("archiving failed, session kept: %w", err)
	}
	s.builder.Invalidate()
	return nil
}

// memoryFiles are the files consolidation writes: in PostgreSQL beside
// the session when the store is PGStore (the user's own pair), else the
// workspace's memory/MEMORY.md and memory/HISTORY.md.
func (s *Session) memoryFiles() consolidate.Files {
	if p, ok := s.store.(*PGStore); ok {
		return p.MemoryFiles(s.opts.User)
	}
	return consolidate.WorkspaceFiles{WS: s.opts.Workspace}
}

// archiveRawAndTrim is /new with no model consolidation: the turns not yet
// consolidated go to HISTORY.md as they are, under the memory files' lock,
// and only once that append succeeded is the session trimmed, so /new never
// loses a conversation.
func (s *Session) archiveRawAndTrim(ctx context.Context) error {
	files := s.memoryFiles()
	unlock, err := files.Lock(ctx, s.opts.LockWait)
	if err != nil {
		return fmt.Errorf("archiving failed, session kept: memory files: %w", err)
	}
	defer unlock()
	st, err := s.store.Load(ctx, s.opts.Key)
	if err != nil {
		return err
	}
	if rest := st.Messages[st.LastConsolidated:]; len(rest) > 0 {
		entry := fmt.Sprintf("[%s] [RAW] %d messages (/new, no consolidation)\n%s",
			s.opts.Now().Format("2006-01-02 15:04"), len(rest), consolidate.Transcript(rest))
		if err := files.AppendHistory(entry); err != nil {
			return fmt.Errorf("archiving failed, session kept: %w", err)
		}
	}
	if pf, ok := files.(*PGFiles); ok {
		if err := pf.commit(context.WithoutCancel(ctx), s.opts.Key, st.LastConsolidated, len(st.Messages), true); err != nil {
			return fmt.Errorf("archiving failed, session kept: %w", err)
		}
		return nil
	}
	return s.store.Trim(context.WithoutCancel(ctx), s.opts.Key, len(st.Messages))
}

// Close waits for a running consolidation within ctx (or
// DefaultShutdownWait when ctx has no deadline), then releases what Open
// made. A consolidation still running then is stopped; its chunk stays
// unconsolidated and is taken again next time.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultShutdownWait)
		defer cancel()
	}
	done := make(chan struct{})
	go func() { s.bgWG.Wait(); close(done) }()
	var errs []error
	select {
	case <-done:
	case <-ctx.Done():
		s.bgCancel()
		<-done
		errs = append(errs, errors.New("consolidation still running at close was stopped; its messages stay unconsolidated"))
	}
	s.bgCancel()
	dropLock(s.opts.Workspace.Root() + "\x00" + s.opts.Key)
	errs = append(errs, s.release())
	return errors.Join(errs...)
}

func (s *Session) release() error {
	var errs []error
	if s.ownS && s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.ownB && s.builder != nil {
		errs = append(errs, s.builder.Close())
	}
	return errors.Join(errs...)
}

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// keyLock serializes turns on one session key within this process; the
// store's file lock covers other processes.
type keyLock struct {
	ch   chan struct{}
	refs int
}

var (
	keyLocksMu sync.Mutex
	keyLocks   = map[string]*keyLock{}
)

func lockFor(key string) *keyLock {
	keyLocksMu.Lock()
	defer keyLocksMu.Unlock()
	l := keyLocks[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		keyLocks[key] = l
	}
	l.refs++
	return l
}

func dropLock(key string) {
	keyLocksMu.Lock()
	defer keyLocksMu.Unlock()
	if l := keyLocks[key]; l != nil {
		if l.refs--; l.refs <= 0 {
			delete(keyLocks, key)
		}
	}
}

func (l *keyLock) lock(ctx context.Context) error {
	select {
	case l.ch <- struct{}{}: // free: taken even if ctx has ended, so the turn can save what it has
		return nil
	default:
	}
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *keyLock) unlock() { <-l.ch }
