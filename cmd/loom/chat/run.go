package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/extract"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// SessionDir holds chat sessions, relative to the workspace folder.
const SessionDir = ".loom/sessions"

var unsafeKey = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// SessionPath is the session file of channel and user under dir.
func SessionPath(dir, channel, user string) string {
	if channel == "" {
		channel = "cli"
	}
	if user == "" {
		user = "default"
	}
	key := unsafeKey.ReplaceAllString(channel+"_"+user, "_")
	return filepath.Join(dir, filepath.FromSlash(SessionDir), key+".jsonl")
}

// session is one running chat.
type session struct {
	opts   *ChatOptions
	cfg    Config
	client llm.Client
	files  consolidate.Files
	store  memory.Store
	worker *extract.Worker
	cons   *consolidate.Consolidator
	path   string
	key    string
	logger *slog.Logger

	mu   sync.Mutex // guards sess against the consolidation goroutine
	sess *consolidate.Session

	consolidating sync.WaitGroup
	busy          bool // a consolidation is running; guarded by mu

	pendingSkill string
	totals       llm.Usage

	zone      *time.Location // of the runtime context's time
	placement string         // of the runtime context: "before" or "after"
}

func chatRun(opts *ChatOptions) error {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	release, err := opts.wireDefaults()
	defer release()
	if err != nil {
		return err
	}
	var cfg Config
	if opts.LoadConfig != nil {
		c, err := opts.LoadConfig(opts.Dir)
		if err != nil {
			return err
		}
		cfg = c
	} else if cfg.LLM, err = llm.Resolve(config.LLMConfig{}, nil); err != nil {
		return err
	}
	client, err := llm.New(cfg.LLM)
	if err != nil {
		return fmt.Errorf("%w\n\n%s", err, llm.Help)
	}
	ws, err := workspace.Open(opts.Dir)
	if err != nil {
		return err
	}
	wc, err := config.Load(ws)
	if err != nil {
		return err
	}
	dbPath, err := config.MemoryStoreLocation(ws.Root(), wc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return err
	}
	store, err := memory.OpenSQLite(dbPath)
	if err != nil {
		return err
	}
	defer store.Close()

	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(opts.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s := &session{
		opts: opts, cfg: cfg, client: client, store: store, logger: logger,
		files: consolidate.WorkspaceFiles{WS: ws},
		path:  SessionPath(ws.Root(), opts.Channel, opts.User),
	}
	s.key = strings.TrimSuffix(filepath.Base(s.path), ".jsonl")
	s.zone, s.placement = time.UTC, cfg.Placement
	if cfg.Timezone != "" {
		if loc, err := time.LoadLocation(cfg.Timezone); err == nil {
			s.zone = loc
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "loom: warning: loom.yaml: unknown time zone %q; using UTC\n", cfg.Timezone)
		}
	}
	if s.sess, err = consolidate.ReadSession(s.path); err != nil {
		return err
	}
	if s.sess.Key == "" {
		s.sess.Key, s.sess.CreatedAt = s.key, opts.Now().UTC()
	}
	counter, _ := tokens.ForModel(cfg.LLM.Model)
	if cfg.ConsolidateThreshold >= 0 {
		s.cons = consolidate.New(consolidate.Options{
			Client: client, Files: s.files, Counter: counter, Model: cfg.LLM.ConsolidateModel,
			Threshold: cfg.ConsolidateThreshold, Keep: cfg.ConsolidateKeep, Now: opts.Now, Logger: logger,
		})
	}
	if !cfg.NoExtract {
		ex := extract.New(extract.Options{Client: client, Store: store, Model: cfg.LLM.ExtractModel,
			IncludeAssistant: cfg.ExtractAssistant, Logger: logger})
		s.worker = extract.NewWorker(ex, extract.WorkerOptions{QueueSize: cfg.ExtractQueue, Logger: logger})
	}

	interrupt := opts.Interrupt
	if interrupt == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt)
		defer signal.Stop(ch)
		interrupt = ch
	}
	loopErr := s.loop(interrupt)
	closeErr := s.shutdown()
	return errors.Join(loopErr, closeErr)
}

func (s *session) loop(interrupt <-chan os.Signal) error {
	ios := s.opts.IO
	in := bufio.NewReader(ios.In)
	if ios.IsTTY {
		fmt.Fprintf(ios.ErrOut, "loom chat · %s · session %s · /help for commands\n", s.cfg.LLM.Model, s.key)
	}
	for {
		if ios.IsTTY {
			fmt.Fprint(ios.ErrOut, "> ")
		}
		line, err := in.ReadString('\n')
		text := strings.TrimSpace(line)
		if text != "" {
			if quit := s.handle(text, interrupt); quit {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read input: %w", err)
		}
	}
}

// handle runs one line; it reports whether the session should end.
func (s *session) handle(text string, interrupt <-chan os.Signal) bool {
	out, errOut := s.opts.IO.Out, s.opts.IO.ErrOut
	if !strings.HasPrefix(text, "/") || strings.HasPrefix(text, "//") {
		s.turn(strings.TrimPrefix(text, "/"), interrupt)
		return false
	}
	cmd, rest, _ := strings.Cut(text[1:], " ")
	rest = strings.TrimSpace(rest)
	switch cmd {
	case "exit", "quit":
		return true
	case "help":
		fmt.Fprint(out, helpText)
	case "new":
		s.newSession()
	case "memory":
		s.showMemory()
	case "prompt":
		s.showPrompt()
	case "skill":
		name, msg, _ := strings.Cut(rest, " ")
		s.skill(name, strings.TrimSpace(msg), interrupt)
	default:
		if s.opts.Skill == nil {
			fmt.Fprintf(errOut, "loom: unknown command /%s (try /help)\n", cmd)
			return false
		}
		s.skill(cmd, rest, interrupt)
	}
	return false
}

const helpText = `/new           archive the session into memory and start over
/skill NAME    load a skill for the next turn (also /NAME [message])
/memory        show what is remembered
/prompt        show the current system prompt
/help          list the commands
/exit          end the session (so does end of input)
Start a message with // to send a literal slash.
`

func (s *session) skill(name, msg string, interrupt <-chan os.Signal) {
	errOut := s.opts.IO.ErrOut
	if name == "" {
		fmt.Fprintln(errOut, "loom: /skill needs a skill name")
		return
	}
	if s.opts.Skill == nil {
		fmt.Fprintln(errOut, "loom: skills are not available in this build")
		return
	}
	body, err := s.opts.Skill(name)
	if err != nil {
		fmt.Fprintf(errOut, "loom: /%s: %v\n", name, err)
		return
	}
	s.pendingSkill = fmt.Sprintf("[Skill: %s — instructions for this turn]\n%s\n[/Skill]", name, strings.TrimSpace(body))
	if msg == "" {
		fmt.Fprintf(errOut, "skill %s loaded for the next turn\n", name)
		return
	}
	s.turn(msg, interrupt)
}

// turn sends one user message and streams the reply.
func (s *session) turn(text string, interrupt <-chan os.Signal) {
	out, errOut := s.opts.IO.Out, s.opts.IO.ErrOut
	// A Ctrl-C pressed while idle must not cancel this turn.
	for drained := false; !drained; {
		select {
		case <-interrupt:
		default:
			drained = true
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-interrupt:
			cancel()
		case <-stop:
		}
	}()

	system := ""
	if s.opts.SystemPrompt != nil {
		p, err := s.opts.SystemPrompt(ctx)
		if err != nil {
			fmt.Fprintf(errOut, "loom: system prompt: %v\n", err)
			return
		}
		system = p
	}
	now := s.opts.Now().UTC()
	s.mu.Lock()
	user := consolidate.Message{Role: messages.RoleUser, Content: messages.TextContent(text), Time: now}
	history := buildHistory(s.sess.Messages[s.sess.LastConsolidated:])
	s.mu.Unlock()

	current := text
	if s.pendingSkill != "" {
		current = s.pendingSkill + "\n\n" + text
		s.pendingSkill = ""
	}
	// The runtime context rides on this turn's message only: the system
	// prompt stays byte-stable for the provider's cache, and the saved
	// history (user above) never holds it.
	rt := messages.Runtime{Now: s.opts.Now(), Location: s.zone, Channel: s.opts.Channel, ChatID: s.key, SenderID: s.opts.User}
	if s.placement == "before" {
		current = messages.RuntimeBlock(rt) + "\n\n" + current
	} else {
		current = current + "\n\n" + messages.RuntimeBlock(rt)
	}
	msgs := appendUser(history, current)
	res, err := s.client.Stream(ctx, llm.Request{System: system, Messages: msgs}, func(d string) {
		io.WriteString(out, d)
	})
	if res.Content != "" && !strings.HasSuffix(res.Content, "\n") {
		fmt.Fprintln(out)
	}

	// The user's words are kept whatever happened to the reply; the reply
	// only when it is whole. The skill body is not: it was for this turn.
	s.mu.Lock()
	s.sess.Messages = append(s.sess.Messages, user)
	switch {
	case err == nil:
		s.sess.Messages = append(s.sess.Messages, consolidate.Message{
			Role: messages.RoleAssistant, Content: messages.TextContent(res.Content), Time: s.opts.Now().UTC()})
	case ctx.Err() != nil:
		fmt.Fprintln(errOut, "[reply cancelled]")
	default:
		fmt.Fprintf(errOut, "loom: %v\n", err)
	}
	saveErr := s.saveLocked()
	snapshot := append([]consolidate.Message(nil), s.sess.Messages...)
	s.mu.Unlock()
	if saveErr != nil {
		fmt.Fprintf(errOut, "loom: save session: %v\n", saveErr)
	}
	if err == nil {
		s.totals = s.totals.Add(res.Usage)
		fmt.Fprintln(errOut, statusLine(res.Usage))
	}

	if s.worker != nil {
		job := extract.Job{Chat: s.key, User: s.opts.User}
		for _, m := range snapshot {
			job.Messages = append(job.Messages, m)
		}
		if err := s.worker.Submit(job); err != nil {
			s.logger.Warn("extract: "+err.Error(), "chat", s.key)
		}
	}
	s.maybeConsolidate(snapshot)
}

// statusLine reports a call's usage; the cache share only when the API
// reported caching.
func statusLine(u llm.Usage) string {
	line := fmt.Sprintf("[tokens in %d · out %d", u.InputTokens, u.OutputTokens)
	if u.CacheReported && u.InputTokens > 0 {
		line += fmt.Sprintf(" · cached %d (%d%%)", u.CachedTokens, u.CachedTokens*100/u.InputTokens)
	}
	return line + "]"
}

// buildHistory is the replayed history: from the first user message on
// (an orphan reply or tool result at the front confuses providers), with
// consecutive user messages merged, since a reply that failed leaves the
// user's message alone.
func buildHistory(ms []consolidate.Message) []messages.Message {
	var out []messages.Message
	for _, m := range ms {
		if len(out) == 0 && m.Role != messages.RoleUser {
			continue
		}
		if m.Role == messages.RoleUser && len(out) > 0 && out[len(out)-1].Role == messages.RoleUser {
			out[len(out)-1].Content = messages.TextContent(out[len(out)-1].Content.String() + "\n\n" + m.Content.String())
			continue
		}
		out = append(out, messages.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name})
	}
	return out
}

func appendUser(history []messages.Message, text string) []messages.Message {
	if n := len(history); n > 0 && history[n-1].Role == messages.RoleUser {
		history[n-1].Content = messages.TextContent(history[n-1].Content.String() + "\n\n" + text)
		return history
	}
	return append(history, messages.Message{Role: messages.RoleUser, Content: messages.TextContent(text)})
}

func (s *session) saveLocked() error {
	s.sess.UpdatedAt = s.opts.Now().UTC()
	return s.sess.Save(s.path)
}

// maybeConsolidate starts a background consolidation when the history is
// due and none is running. The pointer moves only after the memory files
// were written, and only forward.
func (s *session) maybeConsolidate(msgs []consolidate.Message) {
	if s.cons == nil {
		return
	}
	s.mu.Lock()
	last := s.sess.LastConsolidated
	if s.busy || !s.cons.Due(msgs, last) {
		s.mu.Unlock()
		return
	}
	s.busy = true
	s.consolidating.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.consolidating.Done()
		newLast, _, err := s.cons.Maybe(context.Background(), msgs, last)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.busy = false
		if err != nil {
			s.logger.Error("consolidate: "+err.Error(), "chat", s.key)
		}
		if newLast > s.sess.LastConsolidated && newLast <= len(s.sess.Messages) {
			s.sess.LastConsolidated = newLast
			if err := s.saveLocked(); err != nil {
				s.logger.Error("consolidate: save session: "+err.Error(), "chat", s.key)
			}
		}
	}()
}

// newSession archives what is not consolidated yet, then clears the
// session; if archiving fails the session is kept.
func (s *session) newSession() {
	errOut := s.opts.IO.ErrOut
	s.consolidating.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cons != nil {
		if _, err := s.cons.Archive(context.Background(), s.sess.Messages, s.sess.LastConsolidated); err != nil {
			fmt.Fprintf(errOut, "loom: archiving failed, session kept: %v\n", err)
			return
		}
	}
	s.sess.Messages, s.sess.LastConsolidated = nil, 0
	s.sess.CreatedAt = s.opts.Now().UTC()
	if err := s.saveLocked(); err != nil {
		fmt.Fprintf(errOut, "loom: save session: %v\n", err)
		return
	}
	fmt.Fprintln(errOut, "new session started")
}

func (s *session) showMemory() {
	out := s.opts.IO.Out
	text, err := s.files.ReadMemory()
	if err != nil {
		fmt.Fprintf(s.opts.IO.ErrOut, "loom: %v\n", err)
	}
	fmt.Fprintf(out, "## %s\n\n", memory.MemoryFile)
	if strings.TrimSpace(text) == "" {
		fmt.Fprintln(out, "(empty)")
	} else {
		fmt.Fprintln(out, strings.TrimRight(text, "\n"))
	}
	ms, err := s.store.List(context.Background(), memory.Query{User: s.opts.User})
	if err != nil {
		fmt.Fprintf(s.opts.IO.ErrOut, "loom: %v\n", err)
		return
	}
	fmt.Fprintf(out, "\n## Memories (%d)\n\n", len(ms))
	for _, m := range ms {
		fmt.Fprintf(out, "- [%s] %s (%s)\n", m.Category, m.Content, m.ID)
	}
	if s.worker != nil {
		st := s.worker.Stats()
		fmt.Fprintf(out, "\nextraction: %d done, %d failed, %d dropped, %d added, %d unknown supersedes\n",
			st.Done, st.Failed, st.Dropped, st.Added, st.UnknownSupersedes)
	}
}

func (s *session) showPrompt() {
	out, errOut := s.opts.IO.Out, s.opts.IO.ErrOut
	if s.opts.SystemPrompt == nil {
		fmt.Fprintln(errOut, "loom: no system prompt is configured")
		return
	}
	p, err := s.opts.SystemPrompt(context.Background())
	if err != nil {
		fmt.Fprintf(errOut, "loom: system prompt: %v\n", err)
		return
	}
	fmt.Fprintln(out, strings.TrimRight(p, "\n"))
	if s.opts.PromptReport != nil {
		if r, err := s.opts.PromptReport(context.Background()); err == nil {
			fmt.Fprintln(errOut, strings.TrimRight(r, "\n"))
		}
	}
}

// shutdown lets running consolidation and queued extraction finish within
// ShutdownWait, then reports what could not be done.
func (s *session) shutdown() error {
	wait := s.cfg.ShutdownWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	done := make(chan struct{})
	go func() { s.consolidating.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		fmt.Fprintln(s.opts.IO.ErrOut, "loom: consolidation still running at exit; the session pointer was not moved")
	}
	if s.worker == nil {
		return nil
	}
	err := s.worker.Close(ctx)
	st := s.worker.Stats()
	if st.Failed+st.Dropped+st.Abandoned > 0 {
		fmt.Fprintf(s.opts.IO.ErrOut, "loom: extraction: %d failed, %d dropped, %d not run at exit\n", st.Failed, st.Dropped, st.Abandoned)
	}
	if err != nil {
		return fmt.Errorf("extraction: %w", err)
	}
	return nil
}
