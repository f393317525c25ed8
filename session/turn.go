package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/extract"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
)

// TurnInput is one user message, or one turn of a conversation the client
// holds.
type TurnInput struct {
	// Text is the message as typed; /name and $name expand to skills for
	// this turn only (the saved message keeps the text as typed).
	Text string
	// Media are image paths to attach.
	Media []string
	// OnDelta receives the reply as it streams; optional (Turn only).
	OnDelta func(string)

	// Conversation, when set, is the conversation as the client of a
	// stateless API holds it (the gateway's Chat Completions): the
	// history is the client's, not the store's, and what Record stores
	// is the messages after its last assistant message, then the reply.
	// Text and Media are unused; Prepare renders the prompt and leaves
	// the message list to the caller, which knows the client's wire.
	Conversation []messages.Message
	// ID names the turn so that a client's retry is stored once: a turn
	// whose ID is among the session's recent messages is not stored
	// again. Empty means none for a Text turn, and for a Conversation
	// turn the conversation's hash ([ConversationID]) when it holds a
	// reply already: a client that keeps the history and sends the same
	// conversation again did not see its reply. A conversation of new
	// messages only (a client keeping no history, whose "yes" twice is
	// two turns) is not checked without an ID.
	ID string
}

// TurnResult is what a turn did.
type TurnResult struct {
	// Reply is the model's reply, or the part that arrived before it was
	// cut.
	Reply string
	// Cut is why the reply stopped early, "" when it is whole.
	Cut   string
	Usage llm.Usage
	// Build is the report of the message list sent.
	Build messages.Report
	// Saved tells whether the turn reached the store.
	Saved bool
	// PromptErr is a problem rendering the prompt that did not stop the
	// turn (a prompt over budget).
	PromptErr error
}

// TurnKey is the Extra key of the first message a turn stores: the turn's
// ID (a JSON string), which is how a retry is recognized.
const TurnKey = "loom_turn"

// turnWindow is how many of a session's last messages a retry is looked
// for in.
const turnWindow = 64

// Prepared is a turn between [Session.Prepare] and [Prepared.Record]: the
// session's turn lock is held (in this process and, for a [TurnLocker]
// store, across replicas), the system prompt is rendered and, for a Text
// turn, the message list is built. Exactly one of Record or Release ends
// it; Release after Record does nothing, so `defer p.Release()` is safe.
type Prepared struct {
	// Messages is the list to send, system prompt first; nil for a
	// Conversation turn.
	Messages []messages.Message
	// Prompt is the render the system prompt came from.
	Prompt *prompt.Result
	// PromptErr is a render problem that did not stop the turn (a prompt
	// over budget).
	PromptErr error
	// Build is the message list's report (a Text turn).
	Build messages.Report
	// Fit says what fitting the list into Options.Window left out and
	// why; nil when no window is set (or for a Conversation turn).
	Fit *fit.Report
	// At is the turn's time, as in its runtime block.
	At time.Time
	// Duplicate is set when this turn's ID is stored already: by Prepare
	// for a Text turn (Replay is then the stored reply and there is no
	// need to call the model), by Record otherwise. Record stores
	// nothing for a duplicate.
	Duplicate bool
	Replay    string

	s       *Session
	pending []messages.Message // what Record stores before the reply
	state   *State             // the session as loaded (Text turns)
	id      string
	unlock  func()
	done    bool
}

// Reply is the model's answer to a prepared turn, as Record stores it.
type Reply struct {
	Content   string
	ToolCalls []messages.ToolCall
	// Cut is why the reply stopped early ("" when whole); the stored
	// reply carries it under CutKey, and a cut turn is not mined for
	// memories nor consolidated.
	Cut string
}

// Prepare starts a turn: it takes the session's turn lock, renders the
// system prompt and, for a Text turn, loads the history and builds the
// message list. The lock is held until Record or Release, so turns of one
// session are stored in the order they were prepared, on every replica
// sharing a [TurnLocker] store. A prompt that cannot be rendered is an
// error.
func (s *Session) Prepare(ctx context.Context, in TurnInput) (*Prepared, error) {
	p, err := s.prepare(ctx, in)
	if err != nil {
		return nil, err
	}
	if p.Prompt == nil {
		p.Release()
		return nil, p.PromptErr
	}
	return p, nil
}

// prepare is Prepare, except that a failed render still returns the
// prepared turn (Prompt nil, PromptErr set) with the lock held, so Turn
// can keep the user's message.
func (s *Session) prepare(ctx context.Context, in TurnInput) (*Prepared, error) {
	if err := s.turns.lock(ctx); err != nil {
		return nil, err
	}
	if s.isClosed() {
		s.turns.unlock()
		return nil, ErrClosed
	}
	unlockStore, err := s.lockTurn(ctx)
	if err != nil {
		s.turns.unlock()
		return nil, err
	}
	p := &Prepared{s: s, At: s.opts.Now(), id: in.ID, unlock: func() { unlockStore(); s.turns.unlock() }}
	at := p.At.UTC()
	if in.Conversation != nil {
		lastAsst := -1
		for i, m := range in.Conversation {
			if m.Role == messages.RoleAssistant {
				lastAsst = i
			}
		}
		for _, m := range in.Conversation[lastAsst+1:] {
			if m.Time.IsZero() {
				m.Time = at
			}
			p.pending = append(p.pending, m)
		}
		if p.id == "" && lastAsst >= 0 {
			p.id = ConversationID(in.Conversation)
		}
	} else {
		p.pending = []messages.Message{{Role: messages.RoleUser, Content: messages.TextContent(savedText(in)), Time: at}}
	}
	if p.id != "" && len(p.pending) > 0 {
		first := &p.pending[0]
		extra := maps.Clone(first.Extra())
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[TurnKey], _ = json.Marshal(p.id)
		*first = first.WithExtra(extra)
	}

	// The prompt and the history are local reads, done whatever ctx says:
	// a signal that lands before the model call must still find the
	// user's message saved, which needs the history loaded.
	local := context.WithoutCancel(ctx)
	pr, perr := s.builder.Render(local, s.opts.Prompt)
	p.Prompt, p.PromptErr = pr, perr
	if pr == nil {
		p.PromptErr = fmt.Errorf("system prompt: %w", perr)
		return p, nil
	}
	if in.Conversation != nil {
		return p, nil
	}
	st, err := s.store.Load(local, s.opts.Key)
	if err != nil {
		p.Release()
		return nil, err
	}
	p.state = st
	if p.id != "" {
		if i := findTurn(st.Messages, p.id); i >= 0 {
			p.Duplicate = true
			for _, m := range st.Messages[i+1:] {
				if m.Role == messages.RoleAssistant {
					p.Replay = m.Content.String()
					break
				}
			}
		}
	}
	history, _ := messages.Clean(st.Unconsolidated(), messages.CleanOptions{})
	var fopts fit.Options
	if s.opts.Window > 0 && s.opts.Counter != nil {
		fopts = fit.Options{Window: s.opts.Window, Reserve: s.opts.Reserve, Counter: s.opts.Counter,
			Summaries: s.logSummaries(local, st), SummariesPrecede: true,
			ShrinkSystem: func(room int) (string, []messages.Section, error) {
				po := s.opts.Prompt
				po.Budget = room
				r, err := s.builder.Render(local, po)
				if r == nil {
					return "", nil, err
				}
				return r.Prompt, nil, nil // over budget or not, the smaller render
			}}
	}
	built, fitted, err := fit.Build(messages.Turn{
		System:  pr.Prompt,
		History: history,
		Message: in.Text,
		Media:   in.Media,
		Runtime: messages.Runtime{
			Now: p.At, Location: s.opts.Location, Channel: s.opts.Channel,
			ChatID: s.opts.Key, SenderID: s.opts.User, Placement: s.opts.Placement,
		},
		Skills: s.skills,
		// With memory.retrieval: relevant, the memories this turn is
		// about go into its runtime block.
		Recall: s.builder.Recall(local, pr, in.Text, messages.PreviousTurn(history)),
	}, messages.Options{Counter: s.opts.Counter}, fopts)
	if err != nil {
		p.Release()
		return nil, err
	}
	p.Messages, p.Build, p.Fit = built.Messages, built.Report, fitted
	return p, nil
}

// ErrTurnEnded is returned by Record on a turn already recorded or
// released.
var ErrTurnEnded = errors.New("session: the turn was already recorded or released")

// Record stores the turn: the user's message (or the client's new
// messages) and the reply, in one store write, then releases the turn
// lock and, unless the reply was cut, queues memory extraction and starts
// a consolidation when one is due. When Record returns nil the turn is
// stored; only then may a front end acknowledge it (a 200, a stream's last
// event). Storing does not depend on ctx's cancellation: a turn whose
// client left is still kept.
func (p *Prepared) Record(ctx context.Context, r Reply) error {
	if p.done {
		return ErrTurnEnded
	}
	p.done = true
	s := p.s
	saved := p.pending
	if r.Content != "" || len(r.ToolCalls) > 0 {
		reply := messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(r.Content), ToolCalls: r.ToolCalls, Time: s.opts.Now().UTC()}
		if r.Cut != "" {
			reason, _ := json.Marshal(r.Cut)
			reply = reply.WithExtra(map[string]json.RawMessage{CutKey: reason})
		}
		saved = append(saved[:len(saved):len(saved)], reply)
	}
	if !p.Duplicate {
		stored, err := s.appendTurn(ctx, p.id, saved)
		if err != nil {
			p.unlock()
			return err
		}
		p.Duplicate = !stored
	}
	p.unlock()
	if r.Cut != "" || p.Duplicate {
		return nil
	}
	s.extract(len(saved))
	if p.state != nil {
		s.maybeConsolidate(append(append([]messages.Message(nil), p.state.Messages...), saved...), p.state.LastConsolidated)
	} else {
		s.maybeConsolidate(nil, -1)
	}
	return nil
}

// Release ends a turn without storing it (the model call failed before
// anything came, say), releasing the turn lock. After Record it does
// nothing.
func (p *Prepared) Release() {
	if p.done {
		return
	}
	p.done = true
	p.unlock()
}

// ConversationID is the identity of a client-held conversation: the
// SHA-256 of its messages in chat form (no timestamps, no extra keys).
// A client that sends the same conversation again is retrying the same
// turn.
func ConversationID(conv []messages.Message) string {
	h := sha256.New()
	var line []byte
	for _, m := range conv {
		m = m.WithExtra(nil)
		m.Time = time.Time{}
		var err error
		if line, err = messages.AppendJSONL(line[:0], m); err != nil {
			line = append(line[:0], m.Role...)
			line = append(line, m.Content.String()...)
		}
		h.Write(line)
	}
	return "c" + hex.EncodeToString(h.Sum(nil)[:16])
}

// findTurn returns the index of the message carrying turn id among the
// last turnWindow of msgs, or -1.
func findTurn(msgs []messages.Message, id string) int {
	want, _ := json.Marshal(id)
	for i := len(msgs) - 1; i >= max(0, len(msgs)-turnWindow); i-- {
		if v, ok := msgs[i].Extra()[TurnKey]; ok && string(v) == string(want) {
			return i
		}
	}
	return -1
}

// TurnAppender is a Store that stores a turn unless one with the same ID
// is among the session's last messages, in one step under its lock
// (FileStore and PGStore are). Other stores are read, then appended to,
// under the session's turn lock.
type TurnAppender interface {
	AppendTurn(ctx context.Context, key, id string, msgs ...messages.Message) (stored bool, err error)
}

// appendTurn stores msgs unless turn id is stored already. Storing
// outlives ctx: what the user typed is kept even when the turn was
// cancelled.
func (s *Session) appendTurn(ctx context.Context, id string, msgs []messages.Message) (bool, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.LockWait+5*time.Second)
	defer cancel()
	stored, err := true, error(nil)
	switch ta, ok := s.store.(TurnAppender); {
	case id == "":
		err = s.store.Append(sctx, s.opts.Key, msgs...)
	case ok:
		stored, err = ta.AppendTurn(sctx, s.opts.Key, id, msgs...)
	default:
		var st *State
		if st, err = s.store.Load(sctx, s.opts.Key); err == nil {
			if stored = findTurn(st.Messages, id) < 0; stored {
				err = s.store.Append(sctx, s.opts.Key, msgs...)
			}
		}
	}
	if err != nil {
		return false, fmt.Errorf("save session: %w", err)
	}
	return stored, nil
}

// Turn runs one turn: Prepare, the model call (streamed to in.OnDelta),
// then Record.
//
// The user's message is saved whatever happens to the reply. A reply cut by
// ctx (Ctrl-C, a signal, a client gone) or by a broken stream is saved as
// far as it came, marked with CutKey; the error is returned after saving.
// Saving does not depend on ctx, so a cancelled turn is still kept.
func (s *Session) Turn(ctx context.Context, in TurnInput) (TurnResult, error) {
	var res TurnResult
	if in.Conversation != nil {
		return res, errors.New("session: Turn takes a Text turn; a Conversation turn is Prepare, the caller's model call, then Record")
	}
	p, err := s.prepare(ctx, in)
	if err != nil {
		return res, err
	}
	defer p.Release()
	if p.Prompt == nil {
		// No prompt, no model call; the message is kept for the next turn.
		if serr := p.Record(ctx, Reply{Cut: "no system prompt"}); serr != nil {
			return res, errors.Join(p.PromptErr, serr)
		}
		res.Saved = true
		return res, p.PromptErr
	}
	res.PromptErr, res.Build = p.PromptErr, p.Build
	if p.Duplicate {
		res.Reply, res.Saved = p.Replay, true
		return res, nil
	}
	onDelta := in.OnDelta
	if onDelta == nil {
		onDelta = func(string) {}
	}
	resp, callErr := s.opts.Client.Stream(ctx, toRequest(p.Messages, s.opts.Model), onDelta)
	res.Reply, res.Usage = resp.Content, resp.Usage
	r := Reply{Content: resp.Content, ToolCalls: resp.ToolCalls}
	if callErr != nil {
		res.Cut = cutReason(ctx, callErr)
		r.Cut = res.Cut
	}
	if saveErr := p.Record(ctx, r); saveErr != nil {
		return res, errors.Join(callErr, saveErr)
	}
	res.Saved = true
	return res, callErr
}

// extract queues the session for extraction: the worker reads what is
// stored when it gets to it, and mines every user message since the last
// it mined (newly stored: the n messages this turn added).
func (s *Session) extract(n int) {
	if s.opts.Extract == nil {
		return
	}
	key := s.opts.Key
	job := extract.Job{Chat: key, User: s.opts.User, New: n, Load: func(ctx context.Context) ([]messages.Message, error) {
		st, err := s.store.Load(ctx, key)
		if err != nil {
			return nil, err
		}
		return st.Messages, nil
	}}
	if err := s.opts.Extract.Submit(job); err != nil {
		s.logger.Warn("extract: "+err.Error(), "session", s.opts.Key)
	}
}

// maybeConsolidate starts a background consolidation when the history is
// due and none runs in this session; all nil means the history is loaded
// from the store first, in the background. It does not wait for another
// process's consolidation: the next turn tries again.
func (s *Session) maybeConsolidate(all []messages.Message, last int) {
	if s.cons == nil || (all != nil && !s.cons.Due(all, last)) {
		return
	}
	s.mu.Lock()
	if s.busy || s.closed {
		s.mu.Unlock()
		return
	}
	s.busy = true
	s.bgWG.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bgWG.Done()
		defer func() { s.mu.Lock(); s.busy = false; s.mu.Unlock() }()
		if all == nil {
			st, err := s.store.Load(s.bgCtx, s.opts.Key)
			if err != nil {
				s.logger.Warn("consolidate: load session: "+err.Error(), "session", s.opts.Key)
				return
			}
			if !s.cons.Due(st.Messages, st.LastConsolidated) {
				return
			}
		}
		rep, err := Consolidate(s.bgCtx, s.store, s.opts.Key, s.cons, s.files, ConsolidateOptions{LockWait: -1})
		if err != nil && !errors.Is(err, errLockBusy) {
			s.logger.Error("consolidate: "+err.Error(), "session", s.opts.Key)
		}
		if rep.SessionSaved {
			s.builder.Invalidate() // MEMORY.md may be the database's
		}
	}()
}

// RuntimeSettings are what loom.yaml says about each turn's runtime block:
// the time zone its clock is shown in and whether it goes before or after
// the message text.
type RuntimeSettings struct {
	Location  *time.Location
	Placement messages.Placement
}

// RuntimeFromConfig maps loom.yaml to the runtime block's settings, the
// one mapping every front end uses (`loom chat`, `loom messages`, the
// server's turns and the gateway): timezone (UTC when unset; an unknown
// zone is an error naming it) and runtime.placement ("after" when unset).
func RuntimeFromConfig(cfg *config.Config) (RuntimeSettings, error) {
	rs := RuntimeSettings{Location: time.UTC, Placement: messages.Placement(config.DefaultRuntimePosition)}
	if cfg == nil {
		return rs, nil
	}
	if cfg.Runtime.Placement != "" {
		rs.Placement = messages.Placement(cfg.Runtime.Placement)
	}
	if cfg.Timezone != "" {
		loc, err := time.LoadLocation(cfg.Timezone)
		if err != nil {
			return rs, fmt.Errorf("loom.yaml: unknown time zone %q", cfg.Timezone)
		}
		rs.Location = loc
	}
	return rs, nil
}

// logSummaries gives fitting's note, where history is dropped, the latest
// entries of the conversation log (memory/HISTORY.md, or the user's in
// PostgreSQL) once consolidation has summarised the start of the session.
// st is the session as loaded, or nil when the turn did not load it (a
// Conversation turn): the pointer is then read alone, and only when
// fitting drops something. It gives nothing on any failure: the note then
// only says how many messages went.
func (s *Session) logSummaries(ctx context.Context, st *State) func() []string {
	if st != nil && st.LastConsolidated == 0 {
		return nil
	}
	return func() []string {
		if st == nil {
			if n, err := consolidatedPointer(ctx, s.store, s.opts.Key); err != nil || n == 0 {
				return nil
			}
		}
		var text string
		if p, ok := s.store.(*PGStore); ok {
			t, ok, err := p.MemoryFile(ctx, s.opts.User, pgstore.HistoryFileName)
			if err != nil || !ok {
				return nil
			}
			text = t
		} else {
			data, err := s.opts.Workspace.ReadFile(memory.HistoryFile)
			if err != nil {
				return nil
			}
			text = string(data)
		}
		return fit.LogEntries(text)
	}
}

// LogSummaries is what fitting's note may quote from the conversation
// log for this turn ([fit.Options.Summaries]), for a front end that fits
// a Conversation turn's list itself (the gateway).
func (p *Prepared) LogSummaries(ctx context.Context) func() []string {
	return p.s.logSummaries(ctx, p.state)
}
