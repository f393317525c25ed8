// Package messages is the `loom messages` command: it builds the full
// message list of one turn — system prompt, history, current message with
// its runtime context and images — in a provider's format.
package messages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// SystemPrompt renders the system prompt the flags describe and names its
// top-level sections. Tests replace it.
type SystemPrompt func(ctx context.Context, f *shared.RenderFlags) (text string, sections []messages.Section, diags []workspace.Diagnostic, err error)

// MessagesOptions holds what `loom messages` was asked to do.
type MessagesOptions struct {
	IO    *cmdutil.IOStreams
	Flags shared.RenderFlags

	Message        string
	MessageFile    string
	HistoryFile    string
	Media          []string
	SenderID       string
	Role           string
	Format         string
	Placement      string
	CacheDiff      string
	CacheHistory   bool
	CacheTTL       string
	MinCacheTokens int
	MaxImageBytes  int64
	MaxMediaBytes  int64
	// ContextWindow fits the list into this many tokens (package fit); 0
	// means loom.yaml's llm.context_window, else the window loom knows for
	// llm.model, else no fitting. ReserveOutput is the reply's room; 0
	// means loom.yaml's llm.reserve_output.
	ContextWindow int
	ReserveOutput int
	// logEntries are the workspace's conversation-log entries, for the
	// note where history is dropped from a consolidated session.
	logEntries func() []string

	// SystemPrompt renders the system prompt; nil means the workspace's,
	// rendered by a builder the command shares with /name expansion.
	SystemPrompt SystemPrompt
	// Skills expands /name and $name in the message; nil leaves it as is.
	Skills messages.SkillExpander
	// Counter counts the prefix's tokens; nil means the o200k_base counter.
	Counter messages.Counter
}

// NewCmdMessages returns the `loom messages` command. runF replaces the run
// function in tests; nil means messagesRun.
func NewCmdMessages(ios *cmdutil.IOStreams, runF func(*MessagesOptions) error) *cobra.Command {
	opts := &MessagesOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "messages --message TEXT | --message-file FILE [flags]",
		Short: "Build the full message list of one turn",
		Long: `Build the message list a model sees for one turn: the workspace's system
prompt, the history (--history, JSONL or a JSON array of OpenAI-style
messages), and the current message with a runtime context block (time,
channel, chat id, sender id) and images (--media, repeatable).

The runtime block goes into the current message, after its text unless
--placement before, never into the system prompt, so the system prompt and
history stay a byte-stable prefix a provider can cache. If the history ends
with a message of the current role, the current message is merged into it.

Images are sniffed from their bytes (PNG, JPEG, GIF, WebP), never from the
name, and capped at 5 MiB each and 20 MiB in all. Every attachment left out
is printed as a warning, and listed under dropped_media in --format json.

--format openai prints the Chat Completions messages array; anthropic the
Messages API system blocks and messages, with a cache breakpoint after the
system prompt (and after the last history message with --cache-history);
json the neutral messages with a report: the stable prefix's sha256 and
token count, and a sha256 per system section and per history message.
--cache-diff PREVIOUS.json compares that report with a previous one and
names the first section or message where the prefix changed.

--context-window N fits the list into a model's window (default: loom.yaml
llm.context_window, else the window loom knows for llm.model): when it
passes N less the reply's room (--reserve-output, default loom.yaml
llm.reserve_output, 4096), the oldest history goes in whole turns, with a
note where it was; then the system prompt is rendered within the room left;
then the note goes; then the current message is cut in its middle. What
went is printed on stderr, and under "fit" in --format json.`,
		Example: `  loom messages -w ws --message "What changed?" --history chat.jsonl
  loom messages --message-file q.txt --media shot.png --format anthropic --cache-history
  loom messages --message hi --history h.jsonl --format json > turn1.json
  loom messages --message again --history h2.jsonl --cache-diff turn1.json
  loom messages --message "go on" --history long.jsonl --context-window 8000 --reserve-output 500
  loom messages --example assistant --message hello --format anthropic`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return messagesRun(cmd.Context(), opts)
		},
	}
	opts.Flags.Bind(cmd)
	fl := cmd.Flags()
	fl.StringVar(&opts.Message, "message", "", "the current message")
	fl.StringVar(&opts.MessageFile, "message-file", "", `file holding the current message ("-" for standard input)`)
	fl.StringVar(&opts.HistoryFile, "history", "", "history file: JSONL or a JSON array of OpenAI-style messages")
	fl.StringArrayVar(&opts.Media, "media", nil, "image to attach (repeatable)")
	fl.StringVar(&opts.SenderID, "sender-id", "", "sender id for the runtime context")
	fl.StringVar(&opts.Role, "role", "user", "role of the current message: user or assistant")
	fl.StringVar(&opts.Format, "format", "openai", "output format: openai, anthropic or json")
	cmdutil.AddJSONFormatAlias(fl, &opts.Format)
	fl.StringVar(&opts.Placement, "placement", "", "runtime context before or after the message text (default: loom.yaml runtime.placement, else after)")
	fl.StringVar(&opts.CacheDiff, "cache-diff", "", "previous --format json output to compare the prefix with")
	fl.BoolVar(&opts.CacheHistory, "cache-history", false, "anthropic: also put a cache breakpoint after the last history message")
	fl.StringVar(&opts.CacheTTL, "cache-ttl", "", "anthropic: cache lifetime, 5m or 1h (default: the provider's)")
	fl.IntVar(&opts.MinCacheTokens, "min-cache-tokens", messages.DefaultMinCacheTokens, "warn when the stable prefix is smaller (varies by provider and model)")
	fl.Int64Var(&opts.MaxImageBytes, "max-image-bytes", messages.DefaultMaxImageBytes, "largest image to attach")
	fl.Int64Var(&opts.MaxMediaBytes, "max-media-bytes", messages.DefaultMaxMediaBytes, "most image bytes in one turn")
	fl.IntVar(&opts.ContextWindow, "context-window", 0, "fit the list into this many tokens (default: loom.yaml llm.context_window)")
	fl.IntVar(&opts.ReserveOutput, "reserve-output", 0, "tokens kept for the reply when fitting (default: loom.yaml llm.reserve_output, 4096)")
	cmd.MarkFlagsMutuallyExclusive("message", "message-file")
	return cmd
}

func (o *MessagesOptions) check() error {
	if o.Message == "" && o.MessageFile == "" && len(o.Media) == 0 {
		return cmdutil.FlagErrorf("give the current message with --message or --message-file")
	}
	switch o.Format {
	case "openai", "anthropic", "json":
	default:
		return cmdutil.FlagErrorf("--format must be openai, anthropic or json")
	}
	switch o.Role {
	case "user", "assistant":
	default:
		return cmdutil.FlagErrorf("--role must be user or assistant")
	}
	switch o.Placement {
	case "", "before", "after":
	default:
		return cmdutil.FlagErrorf("--placement must be before or after")
	}
	switch o.CacheTTL {
	case "", "5m", "1h":
	default:
		return cmdutil.FlagErrorf("--cache-ttl must be 5m or 1h")
	}
	if o.MinCacheTokens < 0 || o.MaxImageBytes <= 0 || o.MaxMediaBytes <= 0 {
		return cmdutil.FlagErrorf("--min-cache-tokens, --max-image-bytes and --max-media-bytes must be positive")
	}
	if o.ContextWindow < 0 || o.ReserveOutput < 0 {
		return cmdutil.FlagErrorf("--context-window and --reserve-output must be positive numbers of tokens")
	}
	if o.ContextWindow > 0 && o.ReserveOutput >= o.ContextWindow {
		return cmdutil.FlagErrorf("--reserve-output %d leaves no room in a --context-window of %d", o.ReserveOutput, o.ContextWindow)
	}
	return nil
}

func messagesRun(ctx context.Context, o *MessagesOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var recall func(text string, history []messages.Message) *memory.Recall
	if err := o.check(); err != nil {
		return err
	}
	// The render flags are checked before anything is read, so a bad one
	// (--encoding bogus) is a usage error, as it is for loom render.
	if _, err := o.Flags.Options(); err != nil {
		return err
	}
	if o.SystemPrompt == nil { // a real workspace, not a test's fixed prompt
		ws, err := o.Flags.Workspace()
		if err != nil {
			return err
		}
		// One builder: the prompt and /name expansion share its skills.
		b, closeBuilder, err := shared.NewBuilder(ctx, ws)
		if err != nil {
			return err
		}
		defer closeBuilder()
		zone, err := o.fromWorkspace(b, &o.Flags)
		if err != nil {
			return err
		}
		if o.Flags.TZ == "" {
			o.Flags.TZ = zone
		}
		var first *prompt.Result // the full render, before any fitting shrinks it
		o.SystemPrompt = func(ctx context.Context, f *shared.RenderFlags) (string, []messages.Section, []workspace.Diagnostic, error) {
			return renderWith(ctx, b, f, &first)
		}
		// With memory.retrieval: relevant, the memories this message is
		// about go into its runtime block.
		recall = func(text string, history []messages.Message) *memory.Recall {
			return b.Recall(ctx, first, text, messages.PreviousTurn(history))
		}
	}
	runtime, err := o.runtime()
	if err != nil {
		return err
	}
	text := o.Message
	if o.MessageFile != "" {
		if text, err = readMessage(o.MessageFile, o.IO.In); err != nil {
			return err
		}
	}
	var history []messages.Message
	consolidated := false
	if o.HistoryFile != "" {
		h, err := messages.ReadSessionFile(o.HistoryFile, messages.HistoryOptions{})
		if err != nil {
			return err
		}
		history = h.Messages
		consolidated = h.Meta != nil && h.Meta.LastConsolidated > 0
	}
	var prev *messages.Report
	if o.CacheDiff != "" {
		data, err := cmdutil.ReadFileLimit(o.CacheDiff, cmdutil.DefaultReadLimit, nil)
		if err != nil {
			return err
		}
		r, err := messages.ReadReport(data)
		if err != nil {
			return fmt.Errorf("%s: %v", o.CacheDiff, err)
		}
		prev = &r
	}

	render := o.SystemPrompt
	system, sections, diags, err := render(ctx, &o.Flags)
	cmdutil.PrintDiagnostics(o.IO.ErrOut, diags)
	if err != nil {
		return err
	}
	counter := o.Counter
	if counter == nil {
		c, err := tokens.Get(tokens.Default)
		if err != nil {
			return err
		}
		counter = c
	}

	turn := messages.Turn{
		System: system, SystemSections: sections, History: history,
		Message: text, Role: messages.Role(o.Role), Media: o.Media,
		Runtime: runtime, Skills: o.Skills,
	}
	if recall != nil && !runtime.Omit {
		turn.Recall = recall(text, history)
	}
	bopts := messages.Options{
		Media:          messages.MediaLimits{MaxImageBytes: o.MaxImageBytes, MaxMediaBytes: o.MaxMediaBytes},
		Counter:        counter,
		MinCacheTokens: o.MinCacheTokens,
	}
	var fopts fit.Options
	if o.ContextWindow > 0 {
		var summaries func() []string
		if consolidated {
			summaries = o.logEntries
		}
		fopts = fit.Options{Window: o.ContextWindow, Reserve: o.ReserveOutput, Counter: counter, Summaries: summaries,
			ShrinkSystem: func(room int) (string, []messages.Section, error) {
				f := o.Flags
				f.Budget = room
				text, secs, diags, err := render(ctx, &f)
				cmdutil.PrintDiagnostics(o.IO.ErrOut, diags)
				return text, secs, err
			}}
	}
	res, fitted, err := fit.Build(turn, bopts, fopts)
	if err != nil {
		return err
	}
	if prev != nil {
		d := messages.CacheDiff(*prev, res.Report)
		res.Report.CacheDiff = &d
	}

	var out []byte
	switch o.Format {
	case "openai":
		params, err := res.OpenAI()
		if err != nil {
			return err
		}
		out, err = marshalIndent(params)
		if err != nil {
			return err
		}
	case "anthropic":
		req, err := res.Anthropic(o.CacheHistory, o.CacheTTL)
		if err != nil {
			return err
		}
		out, err = marshalIndent(req)
		if err != nil {
			return err
		}
	default:
		if out, err = jsonout.Marshal(jsonOutput{Output: messages.Output{Messages: res.Messages, Report: res.Report}, Fit: fitted}); err != nil {
			return err
		}
	}
	if _, err := o.IO.Out.Write(out); err != nil {
		return err
	}
	warn(o.IO.ErrOut, res.Report)
	if fitted != nil {
		for _, r := range fitted.Reasons {
			fmt.Fprintf(o.IO.ErrOut, "loom: fit: %s\n", workspace.OneLine(r))
		}
	}
	return nil
}

// jsonOutput is the json format: messages.Output, and what fitting did.
type jsonOutput struct {
	messages.Output
	Fit *fit.Report `json:"fit,omitempty"`
}

// runtime reads the runtime flags. The zone is --tz, else loom.yaml's, else
// UTC; the clock is --now, else the current time.
func (o *MessagesOptions) runtime() (messages.Runtime, error) {
	rt := messages.Runtime{
		Channel: o.Flags.Channel, ChatID: o.Flags.ChatID, SenderID: o.SenderID,
		Placement: messages.Placement(o.Placement), Location: time.UTC,
	}
	if rt.Placement == "" {
		rt.Placement = messages.PlaceAfter
	}
	if o.Flags.TZ != "" {
		loc, err := time.LoadLocation(o.Flags.TZ)
		if err != nil {
			return rt, cmdutil.FlagErrorf("--tz: unknown time zone %q", o.Flags.TZ)
		}
		rt.Location = loc
	}
	if o.Flags.Now != "" {
		t, err := time.Parse(time.RFC3339, o.Flags.Now)
		if err != nil {
			return rt, cmdutil.FlagErrorf("--now: %v", err)
		}
		rt.Now = t
	}
	return rt, nil
}

// maxMessageFile bounds --message-file: a user message, not a corpus.
const maxMessageFile = 8 << 20

func readMessage(path string, stdin io.Reader) (string, error) {
	data, err := cmdutil.ReadFileLimit(path, maxMessageFile, stdin)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// warn prints dropped media, the cache diff and warnings on stderr.
func warn(w io.Writer, r messages.Report) {
	for _, d := range r.DroppedMedia {
		fmt.Fprintf(w, "loom: warning: %s: attachment dropped (%s): %s\n", workspace.QuotePath(d.Path), d.Code, workspace.OneLine(d.Reason))
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "loom: warning: %s\n", workspace.OneLine(s))
	}
	if r.CacheDiff != nil {
		fmt.Fprintf(w, "loom: cache: %s\n", r.CacheDiff.Reason)
	}
}

// renderWith renders with b the system prompt the flags describe, and names
// its top-level sections by their byte ranges.
func renderWith(ctx context.Context, b *prompt.Builder, f *shared.RenderFlags, first **prompt.Result) (string, []messages.Section, []workspace.Diagnostic, error) {
	o, err := f.Options()
	if err != nil {
		return "", nil, nil, err
	}
	res, err := b.Render(ctx, o)
	if res == nil {
		return "", nil, nil, err
	}
	if *first == nil {
		*first = res
	}
	var over *md.OverBudgetError
	if err != nil && !errors.As(err, &over) {
		return "", nil, res.Report.Diagnostics, err
	}
	// An over-budget prompt is still a prompt: render says so on stderr and
	// so does this command, but the turn is built.
	diags := res.Report.Diagnostics
	if err != nil {
		diags = append(diags, workspace.Diagnostic{Severity: workspace.Warning, Message: err.Error()})
	}
	var sections []messages.Section
	for _, e := range res.Report.Sections() {
		if e.Start >= 0 && e.End >= e.Start {
			sections = append(sections, messages.Section{Name: e.Name, Start: e.Start, End: e.End})
		}
	}
	return res.Prompt, sections, diags, nil
}

// marshalIndent writes v as indented JSON with a final newline, leaving
// <, > and & as they are.
func marshalIndent(v any) ([]byte, error) {
	return jsonout.Marshal(v)
}
