// Package consolidate moves old conversation out of an agent's context into
// its memory files: when the history not yet consolidated grows past a
// token threshold, the oldest chunk (ending where a user turn begins) goes to
// the model with a forced save_memory tool call. Its history_entry is
// appended to HISTORY.md and its memory_update replaces MEMORY.md. A chunk
// the model fails on three times is archived to HISTORY.md raw, so nothing
// is lost. The caller moves its consolidation pointer only when a call
// reports success, that is after both files were written.
package consolidate

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomctx/loom/internal/template"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
)

// ToolName is the function the model is made to call.
const ToolName = "save_memory"

var (
	//go:embed system.md
	systemPrompt string
	//go:embed user.md
	userText string
	// saveMemorySchema is the save_memory tool's parameters.
	//go:embed save_memory.json
	saveMemorySchema []byte
	userTmpl         = sync.OnceValue(func() *template.Template { return template.Must(template.New("user.md").Parse(userText)) })
)

// Counter counts tokens; tokens.Counter satisfies it.
type Counter interface{ Count(string) int }

// Options configure a Consolidator.
type Options struct {
	Client  llm.Client
	Files   Files
	Counter Counter
	// Model overrides the client's model for consolidation calls.
	Model string
	// Threshold is how many tokens of unconsolidated history trigger a
	// consolidation; default 16000.
	Threshold int
	// Keep is how many tokens of recent history stay unconsolidated;
	// default Threshold/2.
	Keep int
	// MaxAttempts is how many calls a chunk gets before it is archived raw;
	// default 3.
	MaxAttempts int
	// MaxRounds bounds chunks consolidated by one Maybe call; default 5.
	MaxRounds int
	// MaxMemoryBytes caps the memory file the model may write; default
	// DefaultMaxMemoryBytes. A bigger memory_update is refused: the old
	// file stays and the chunk is archived raw.
	MaxMemoryBytes int
	// MaxEntryBytes caps one history entry; default DefaultMaxEntryBytes.
	MaxEntryBytes int
	// Now stamps raw archives; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Consolidator runs consolidations. It is safe for concurrent use, but the
// caller should run one at a time per history.
type Consolidator struct {
	opts Options
	// noForce is set once the endpoint rejected a forced tool_choice, so
	// later calls go straight to auto.
	noForce atomic.Bool
}

// New returns a Consolidator.
func New(opts Options) *Consolidator {
	if opts.Threshold <= 0 {
		opts.Threshold = 16000
	}
	if opts.Keep <= 0 || opts.Keep >= opts.Threshold {
		opts.Keep = opts.Threshold / 2
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 3
	}
	if opts.MaxRounds <= 0 {
		opts.MaxRounds = 5
	}
	if opts.MaxMemoryBytes <= 0 {
		opts.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if opts.MaxEntryBytes <= 0 {
		opts.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Consolidator{opts: opts}
}

// Outcome says what one chunk's consolidation did.
type Outcome struct {
	From          int       `json:"from"` // the chunk: messages[From:To]
	To            int       `json:"to"`
	Archived      bool      `json:"archived"`                // saved raw after MaxAttempts failures or a refused reply
	Refused       string    `json:"refused,omitempty"`       // why the model's reply was not written, when it was not
	Attempts      int       `json:"attempts"`                // model calls made
	Forced        bool      `json:"forced"`                  // the last call forced the tool
	HistoryEntry  string    `json:"history_entry,omitempty"` // what was appended to HISTORY.md
	MemoryChanged bool      `json:"memory_changed"`          // MEMORY.md was rewritten
	Failures      []string  `json:"failures,omitempty"`
	Usage         llm.Usage `json:"usage"`
}

// Tokens returns the tokens of msgs as the consolidation threshold counts
// them: role and content of each message.
func (c *Consolidator) Tokens(msgs []messages.Message) int {
	n := 0
	for _, m := range msgs {
		n += c.tokens(m)
	}
	return n
}

func (c *Consolidator) tokens(m messages.Message) int {
	n := c.opts.Counter.Count(m.Content.String()) + 4 // role and framing, as OpenAI counts them
	for _, tc := range m.ToolCalls {
		n += c.opts.Counter.Count(tc.Function.Name) + c.opts.Counter.Count(tc.Function.Arguments)
	}
	return n
}

// Due reports whether msgs[last:] has passed the threshold.
func (c *Consolidator) Due(msgs []messages.Message, last int) bool {
	last = min(max(last, 0), len(msgs))
	return c.Tokens(msgs[last:]) >= c.opts.Threshold
}

// Plan returns the end of the next chunk to consolidate from last: the
// first user message from which the rest of the history fits in Keep
// tokens, so the kept history starts with a user turn. If even the last
// user turn is over Keep, the chunk ends there, keeping that turn. ok is
// false when the threshold is not reached.
func (c *Consolidator) Plan(msgs []messages.Message, last int) (end int, ok bool) {
	last = min(max(last, 0), len(msgs))
	suffix := make([]int, len(msgs)+1) // suffix[i]: tokens of msgs[i:]
	for i := len(msgs) - 1; i >= last; i-- {
		suffix[i] = suffix[i+1] + c.tokens(msgs[i])
	}
	if suffix[last] < c.opts.Threshold {
		return last, false
	}
	lastUser := -1
	for i := last + 1; i < len(msgs); i++ {
		if msgs[i].Role != messages.RoleUser {
			continue
		}
		lastUser = i
		if suffix[i] <= c.opts.Keep {
			return i, true
		}
	}
	if lastUser > last {
		return lastUser, true
	}
	// No later user turn to align to: the whole tail goes.
	return len(msgs), true
}

// Maybe consolidates chunks from last while the threshold is passed, at
// most MaxRounds, and returns the new pointer. It stops at the first error,
// returning the pointer reached so far.
func (c *Consolidator) Maybe(ctx context.Context, msgs []messages.Message, last int) (int, []Outcome, error) {
	var outs []Outcome
	for range c.opts.MaxRounds {
		end, ok := c.Plan(msgs, last)
		if !ok || end <= last {
			break
		}
		out, err := c.Chunk(ctx, msgs, last, end)
		outs = append(outs, out)
		if err != nil {
			return last, outs, err
		}
		last = end
	}
	return last, outs, nil
}

// Archive consolidates everything from last to the end, as /new does before
// clearing a session.
func (c *Consolidator) Archive(ctx context.Context, msgs []messages.Message, last int) (Outcome, error) {
	last = min(max(last, 0), len(msgs))
	if last == len(msgs) {
		return Outcome{From: last, To: last}, nil
	}
	return c.Chunk(ctx, msgs, last, len(msgs))
}

// Chunk consolidates msgs[from:to]. A nil error means MEMORY.md and
// HISTORY.md were both written (or the chunk archived raw), so the caller
// may move its pointer to to. Only a failure to write the files, or ctx
// ending, returns an error.
func (c *Consolidator) Chunk(ctx context.Context, msgs []messages.Message, from, to int) (Outcome, error) {
	out := Outcome{From: from, To: to}
	transcript := Transcript(msgs[from:to])
	if strings.TrimSpace(transcript) == "" {
		return out, nil // nothing with content: tool-call plumbing only
	}
	current, err := c.opts.Files.ReadMemory()
	if err != nil {
		return out, fmt.Errorf("consolidate: read memory: %w", err)
	}
	for out.Attempts < c.opts.MaxAttempts {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		args, err := c.call(ctx, current, transcript, &out)
		if err == nil {
			if reason := c.check(args); reason != "" {
				// The reply is not trusted into the files: the old memory
				// stays, and the chunk is kept raw with the reason.
				out.Refused = reason
				c.opts.Logger.Error("consolidate: model reply refused; chunk archived raw", "reason", reason)
				return out, c.archive(msgs, from, to, transcript, "model reply refused: "+reason, &out)
			}
			return out, c.save(current, args, &out)
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out.Failures = append(out.Failures, err.Error())
		c.opts.Logger.Warn("consolidate: attempt failed", "attempt", out.Attempts, "err", err)
	}
	c.opts.Logger.Error("consolidate: model failed; chunk archived raw", "messages", to-from, "attempts", out.Attempts)
	return out, c.archive(msgs, from, to, transcript, "", &out)
}

// archive appends the chunk's transcript to HISTORY.md as it is, with the
// reason when there is one, so nothing is lost.
func (c *Consolidator) archive(msgs []messages.Message, from, to int, transcript, reason string, out *Outcome) error {
	head := fmt.Sprintf("[%s] [RAW] %d messages", c.opts.Now().Format("2006-01-02 15:04"), to-from)
	if reason != "" {
		head += " (" + reason + ")"
	}
	entry := head + "\n" + transcript
	if err := c.opts.Files.AppendHistory(entry); err != nil {
		return fmt.Errorf("consolidate: archive raw: %w", err)
	}
	out.Archived = true
	out.HistoryEntry = entry
	return nil
}

// saveArgs are the save_memory arguments after normalisation.
type saveArgs struct {
	entry  string
	memory string
}

func (c *Consolidator) request(current, transcript string, force bool) (llm.Request, error) {
	var b bytes.Buffer
	if err := userTmpl().Execute(&b, struct{ Memory, Transcript string }{strings.TrimSpace(current), transcript}); err != nil {
		return llm.Request{}, err
	}
	req := llm.Request{
		Model:    c.opts.Model,
		System:   systemPrompt,
		Messages: []messages.Message{{Role: messages.RoleUser, Content: messages.TextContent(b.String())}},
		Tools:    []llm.Tool{Tool()},
	}
	if force {
		req.ToolChoice = llm.ForceTool(ToolName)
	} else {
		req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceAuto}
	}
	return req, nil
}

// call makes one attempt. A rejected forced tool_choice is retried at once
// with auto, within the same attempt.
func (c *Consolidator) call(ctx context.Context, current, transcript string, out *Outcome) (saveArgs, error) {
	out.Attempts++
	force := !c.noForce.Load()
	req, err := c.request(current, transcript, force)
	if err != nil {
		return saveArgs{}, err
	}
	res, err := c.opts.Client.Complete(ctx, req)
	if err != nil && force && llm.IsToolChoiceRejected(err) {
		c.noForce.Store(true)
		force = false
		req, _ = c.request(current, transcript, false)
		res, err = c.opts.Client.Complete(ctx, req)
	}
	out.Forced = force
	out.Usage = out.Usage.Add(res.Usage)
	if err != nil {
		return saveArgs{}, err
	}
	for _, tc := range res.ToolCalls {
		if tc.Function.Name == ToolName {
			return parseArgs(tc.Function.Arguments)
		}
	}
	if len(res.ToolCalls) > 0 {
		return saveArgs{}, fmt.Errorf("model called %q, not %s", res.ToolCalls[0].Function.Name, ToolName)
	}
	return saveArgs{}, errors.New("model answered in prose instead of calling " + ToolName)
}

// parseArgs reads save_memory arguments given as an object, a list holding
// an object, or a JSON string holding either. Field values that are not
// strings are kept as their JSON text.
func parseArgs(raw string) (saveArgs, error) {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return saveArgs{}, fmt.Errorf("%s arguments: %w", ToolName, err)
	}
	for range 3 { // unwrap string-in-string and list-of-object
		switch x := v.(type) {
		case string:
			if err := json.Unmarshal([]byte(x), &v); err != nil {
				return saveArgs{}, fmt.Errorf("%s arguments: string is not JSON: %w", ToolName, err)
			}
			continue
		case []any:
			if len(x) == 0 {
				return saveArgs{}, fmt.Errorf("%s arguments: empty list", ToolName)
			}
			v = x[0]
			continue
		}
		break
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return saveArgs{}, fmt.Errorf("%s arguments: want an object, got %T", ToolName, v)
	}
	entry, eok := text(obj["history_entry"])
	mem, mok := text(obj["memory_update"])
	if !eok || strings.TrimSpace(entry) == "" {
		return saveArgs{}, fmt.Errorf("%s arguments: history_entry missing or empty", ToolName)
	}
	if !mok {
		return saveArgs{}, fmt.Errorf("%s arguments: memory_update missing", ToolName)
	}
	return saveArgs{entry: entry, memory: mem}, nil
}

func text(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
}

// save writes MEMORY.md first, then HISTORY.md. Should the append fail, a
// retry sees the updated memory and so does not add its facts twice; the
// other order would leave a duplicate history entry.
func (c *Consolidator) save(current string, a saveArgs, out *Outcome) error {
	if strings.TrimSpace(a.memory) != "" && strings.TrimSpace(a.memory) != strings.TrimSpace(current) {
		mem := strings.TrimRight(a.memory, "\n") + "\n"
		if err := c.opts.Files.WriteMemory(mem); err != nil {
			return fmt.Errorf("consolidate: write memory: %w", err)
		}
		out.MemoryChanged = true
	}
	if err := c.opts.Files.AppendHistory(a.entry); err != nil {
		return fmt.Errorf("consolidate: append history: %w", err)
	}
	out.HistoryEntry = a.entry
	return nil
}

// Tool is the save_memory function definition.
func Tool() llm.Tool {
	return llm.Tool{
		Name:        ToolName,
		Description: "Store the consolidation of the conversation in long-term memory.",
		Parameters:  slices.Clone(saveMemorySchema), // a copy: the caller may keep or change it
	}
}

// Transcript renders msgs one line each as "[YYYY-MM-DD HH:MM] ROLE: text";
// tool calls are listed by name, messages without text or calls skipped.
func Transcript(msgs []messages.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		content := strings.TrimSpace(m.Content.String())
		var names []string
		for _, tc := range m.ToolCalls {
			names = append(names, tc.Function.Name)
		}
		if content == "" && len(names) == 0 {
			continue
		}
		stamp := "?"
		if !m.Time.IsZero() {
			stamp = m.Time.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(&b, "[%s] %s", stamp, strings.ToUpper(string(m.Role)))
		if len(names) > 0 {
			fmt.Fprintf(&b, " [tools: %s]", strings.Join(names, ", "))
		}
		if content != "" {
			b.WriteString(": " + content)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// Threshold is the token count of unconsolidated history that makes a
// consolidation due.
func (c *Consolidator) Threshold() int { return c.opts.Threshold }
