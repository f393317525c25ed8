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
	"strings"
	"syscall"
	"time"

	"github.com/loomctx/loom/cmd/loom/render"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/extract"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// SessionDir holds chat sessions, relative to the workspace folder.
const SessionDir = session.Dir

// SessionKey is the session key of channel and user, in nanobot's
// "channel:chat_id" form ("cli:ana", "cli:default"), the chat being the
// user's; its file is the key made safe, cli_ana.jsonl, as nanobot names it.
func SessionKey(channel, user string) string {
	if channel == "" {
		channel = "cli"
	}
	if user == "" {
		user = "default"
	}
	return channel + ":" + user
}

// SessionPath is the session file of channel and user under dir.
func SessionPath(dir, channel, user string) string {
	return filepath.Join(dir, filepath.FromSlash(SessionDir), session.FileName(SessionKey(channel, user)))
}

// repl is one running chat: the terminal side of a session.Session.
type repl struct {
	opts   *ChatOptions
	cfg    Config
	ws     *workspace.Workspace
	sess   *session.Session
	store  memory.Store
	worker *extract.Worker
	popts  prompt.Options

	pendingSkill string
	totals       llm.Usage
}

func chatRun(opts *ChatOptions) error {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// The workspace is opened once; the prompt builder, the skills, the
	// config and the memory files all read through it.
	ws, err := workspace.Open(opts.Dir)
	if err != nil {
		return err
	}
	defer ws.Close()
	load := opts.LoadConfig
	if load == nil {
		load = configFromWorkspace
	}
	cfg, err := load(ws)
	if err != nil {
		return err
	}
	client, err := llm.New(cfg.LLM)
	if err != nil {
		var noKey *llm.NoKeyError
		if errors.As(err, &noKey) {
			return err // the endpoint is set; only the key is missing
		}
		return fmt.Errorf("%w\n\n%s", err, llm.Help)
	}
	if w := llm.KeyWarning(cfg.LLM); w != "" {
		fmt.Fprintf(opts.IO.ErrOut, "loom: warning: %s\n", w)
	}
	// A chat renders the prompt every turn: watch the workspace so that an
	// unchanged one costs no reads.
	if err := ws.Watch(); err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "loom: warning: %v; checking files on each turn instead\n", err)
	}
	wc, err := config.Load(ws)
	if err != nil {
		return err
	}
	pg, err := shared.OpenSharedMemory(context.Background(), ws, wc, true)
	if err != nil {
		return err
	}
	var store memory.Store
	var pgBuilder *prompt.Builder
	if pg != nil {
		defer pg.Close()
		store = pg.Memories
		pgBuilder = prompt.New(ws)
		pgBuilder.SetMemorySource(pg.Memories)
		defer pgBuilder.Close()
	} else {
		dbPath, err := config.MemoryStoreLocation(ws.Root(), wc)
		if err != nil {
			return err
		}
		st, err := memory.OpenIn(ws, dbPath, true)
		if err != nil {
			return err
		}
		defer st.Close()
		store = st
	}

	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(opts.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	key := SessionKey(opts.Channel, opts.User)
	r := &repl{opts: opts, cfg: cfg, ws: ws, store: store}
	r.popts = prompt.Options{Channel: opts.Channel, User: opts.User, ChatID: key}
	if opts.Channel == "cli" {
		r.popts.Channel = "" // the terminal has no wrapper of its own
	}
	// The runtime block as every front end maps loom.yaml to it.
	rt, err := session.RuntimeFromConfig(&config.Config{Timezone: cfg.Timezone, Runtime: config.Runtime{Placement: cfg.Placement}})
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "loom: warning: %v; using UTC\n", err)
	}
	counter, _ := tokens.ForModel(cfg.LLM.Model)
	sopts := session.Options{
		Workspace: ws, Prompt: r.popts, Counter: counter,
		Key: key, Channel: opts.Channel, User: opts.User, Location: rt.Location,
		Placement: rt.Placement,
		Client:    client, Now: opts.Now, Logger: logger,
		Window: cfg.Window, Reserve: cfg.Reserve,
	}
	if pg != nil {
		// Sessions, the pointer and the memory files in PostgreSQL, as
		// loom serve keeps them; the prompt's memories from there too.
		sopts.Store, sopts.Builder = session.NewPGStore(pg.DB, pg.Key), pgBuilder
	}
	if cfg.ConsolidateThreshold >= 0 {
		sopts.Consolidate = &consolidate.Options{
			Model: cfg.LLM.ConsolidateModel, Threshold: cfg.ConsolidateThreshold, Keep: cfg.ConsolidateKeep,
		}
	}
	if !cfg.NoExtract {
		ex := extract.New(extract.Options{Client: client, Store: store, Model: cfg.LLM.ExtractModel,
			IncludeAssistant: cfg.ExtractAssistant, Logger: logger})
		r.worker = extract.NewWorker(ex, extract.WorkerOptions{QueueSize: cfg.ExtractQueue, Logger: logger})
		sopts.Extract = r.worker
	}
	if r.sess, err = session.Open(context.Background(), sopts); err != nil {
		return err
	}

	signals := opts.Signals
	if signals == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(ch)
		signals = ch
	}
	loopErr := r.loop(signals)
	closeErr := r.shutdown()
	return errors.Join(loopErr, closeErr)
}

// loop reads lines until end of input, /exit or a signal that ends the
// chat. Input is read in the background so a signal is seen while waiting.
func (r *repl) loop(signals <-chan os.Signal) error {
	ios := r.opts.IO
	if ios.IsTTY {
		fmt.Fprintf(ios.ErrOut, "loom chat · %s · session %s · /help for commands\n", r.cfg.LLM.Model, r.sess.Key())
	}
	type line struct {
		text string
		err  error
	}
	lines := make(chan line, 1) // a read that ends after the loop has no one to wait for it
	next := make(chan struct{}, 1)
	go func() {
		in := bufio.NewReader(ios.In)
		for range next {
			s, err := in.ReadString('\n')
			lines <- line{s, err}
			if err != nil {
				return
			}
		}
	}()
	defer close(next)
	for {
		if ios.IsTTY {
			fmt.Fprint(ios.ErrOut, "> ")
		}
		next <- struct{}{}
		var l line
		select {
		case l = <-lines:
		case sig := <-signals:
			fmt.Fprintf(ios.ErrOut, "\nloom: %s; session saved\n", sigName(sig))
			return nil
		}
		if text := strings.TrimSpace(l.text); text != "" {
			if quit := r.handle(text, signals); quit {
				return nil
			}
		}
		if l.err == io.EOF {
			return nil
		}
		if l.err != nil {
			return fmt.Errorf("read input: %w", l.err)
		}
	}
}

func sigName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "interrupted"
	case syscall.SIGTERM:
		return "terminated"
	case syscall.SIGHUP:
		return "hangup"
	}
	return sig.String()
}

// handle runs one line; it reports whether the chat should end.
func (r *repl) handle(text string, signals <-chan os.Signal) bool {
	out, errOut := r.opts.IO.Out, r.opts.IO.ErrOut
	if !strings.HasPrefix(text, "/") || strings.HasPrefix(text, "//") {
		return r.turn(strings.TrimPrefix(text, "/"), signals)
	}
	cmd, rest, _ := strings.Cut(text[1:], " ")
	rest = strings.TrimSpace(rest)
	switch cmd {
	case "exit", "quit":
		return true
	case "help":
		fmt.Fprint(out, helpText)
	case "new":
		if err := r.sess.New(context.Background()); err != nil {
			fmt.Fprintf(errOut, "loom: %v\n", err)
		} else {
			fmt.Fprintln(errOut, "new session started")
		}
	case "memory":
		r.showMemory()
	case "prompt":
		r.showPrompt()
	case "skill":
		name, msg, _ := strings.Cut(rest, " ")
		return r.skill(name, strings.TrimSpace(msg), signals)
	default:
		// /NAME is a skill reference in the message itself: Build expands
		// it exactly as `loom messages` does.
		if !r.hasSkill(cmd) {
			fmt.Fprintf(errOut, "loom: unknown command /%s (try /help)\n", cmd)
			return false
		}
		return r.turn(text, signals)
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

func (r *repl) hasSkill(name string) bool {
	set, err := r.sess.Builder().Skills()
	if err != nil {
		return false
	}
	_, ok := set.Get(name)
	return ok
}

func (r *repl) skill(name, msg string, signals <-chan os.Signal) bool {
	errOut := r.opts.IO.ErrOut
	if name == "" {
		fmt.Fprintln(errOut, "loom: /skill needs a skill name")
		return false
	}
	if !r.hasSkill(name) {
		fmt.Fprintf(errOut, "loom: /%s: no skill named %q\n", name, name)
		return false
	}
	if msg == "" {
		r.pendingSkill = "/" + name
		fmt.Fprintf(errOut, "skill %s loaded for the next turn\n", name)
		return false
	}
	return r.turn("/"+name+" "+msg, signals)
}

// turn sends one user message and streams the reply. A signal during the
// reply cancels it; the session saves what there is before Turn returns.
// It reports whether the signal ends the chat.
func (r *repl) turn(text string, signals <-chan os.Signal) (quit bool) {
	out, errOut := r.opts.IO.Out, r.opts.IO.ErrOut
	if r.pendingSkill != "" {
		text = r.pendingSkill + " " + text
		r.pendingSkill = ""
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := make(chan struct{})
	watched := make(chan bool, 1)
	go func() {
		select {
		case sig := <-signals:
			watched <- sig != os.Interrupt
			cancel(errors.New(sigName(sig)))
		case <-stop:
			watched <- false
		}
	}()
	res, err := r.sess.Turn(ctx, session.TurnInput{Text: text, OnDelta: func(d string) { io.WriteString(out, d) }})
	close(stop)
	quit = <-watched
	if res.Reply != "" && !strings.HasSuffix(res.Reply, "\n") {
		fmt.Fprintln(out)
	}
	if res.PromptErr != nil {
		fmt.Fprintf(errOut, "loom: warning: %v\n", res.PromptErr)
	}
	switch {
	case err == nil:
		r.totals = r.totals.Add(res.Usage)
		fmt.Fprintln(errOut, statusLine(res.Usage))
	case ctx.Err() != nil && res.Saved:
		fmt.Fprintf(errOut, "[reply cancelled: %s; saved as cut]\n", context.Cause(ctx))
	default:
		fmt.Fprintf(errOut, "loom: %v\n", err)
	}
	return quit
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

func (r *repl) showMemory() {
	out := r.opts.IO.Out
	text, err := consolidate.WorkspaceFiles{WS: r.ws}.ReadMemory()
	if err != nil {
		fmt.Fprintf(r.opts.IO.ErrOut, "loom: %v\n", err)
	}
	fmt.Fprintf(out, "## %s\n\n", memory.MemoryFile)
	if strings.TrimSpace(text) == "" {
		fmt.Fprintln(out, "(empty)")
	} else {
		fmt.Fprintln(out, strings.TrimRight(text, "\n"))
	}
	ms, err := r.store.List(context.Background(), memory.Query{User: r.opts.User})
	if err != nil {
		fmt.Fprintf(r.opts.IO.ErrOut, "loom: %v\n", err)
		return
	}
	fmt.Fprintf(out, "\n## Memories (%d)\n\n", len(ms))
	for _, m := range ms {
		fmt.Fprintf(out, "- [%s] %s (%s)\n", m.Category, m.Content, m.ID)
	}
	if r.worker != nil {
		st := r.worker.Stats()
		fmt.Fprintf(out, "\nextraction: %d done, %d failed, %d dropped, %d added, %d unknown supersedes\n",
			st.Done, st.Failed, st.Dropped, st.Added, st.UnknownSupersedes)
	}
}

func (r *repl) showPrompt() {
	out, errOut := r.opts.IO.Out, r.opts.IO.ErrOut
	res, err := r.sess.Builder().Render(context.Background(), r.popts)
	if res == nil {
		fmt.Fprintf(errOut, "loom: system prompt: %v\n", err)
		return
	}
	fmt.Fprintln(out, strings.TrimRight(res.Prompt, "\n"))
	var sb strings.Builder
	render.WriteReport(&sb, &res.Report)
	fmt.Fprintln(errOut, strings.TrimRight(sb.String(), "\n"))
}

// shutdown lets a running consolidation and queued extraction finish
// within ShutdownWait, then reports what could not be done.
func (r *repl) shutdown() error {
	wait := r.cfg.ShutdownWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var errs []error
	if err := r.sess.Close(ctx); err != nil {
		fmt.Fprintf(r.opts.IO.ErrOut, "loom: %v\n", err)
	}
	if r.worker == nil {
		return nil
	}
	err := r.worker.Close(ctx)
	st := r.worker.Stats()
	if st.Failed+st.Dropped+st.Abandoned > 0 {
		fmt.Fprintf(r.opts.IO.ErrOut, "loom: extraction: %d failed, %d dropped, %d not run at exit\n", st.Failed, st.Dropped, st.Abandoned)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("extraction: %w", err))
	}
	return errors.Join(errs...)
}
