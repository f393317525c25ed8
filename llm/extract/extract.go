// Package extract mines a conversation for memories: standing instructions
// and facts about the user, each able to supersede a stored one. One call to
// the model per user turn returns structured output (JSON schema where the
// endpoint supports it, tolerant parsing of the reply text otherwise), and
// the result is written to a memory.Store in one transaction. A Worker runs
// extraction in the background so a turn never waits for it.
package extract

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/loomctx/loom/internal/template"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
)

// Memory categories written by extraction.
const (
	CategoryInstruction = "global_rule"
	CategoryProfile     = "personal_fact"
)

// MinUserText is the shortest last user message worth a call, in runes after
// trimming; "ok" and "hi" carry nothing to remember.
const MinUserText = 3

var (
	//go:embed system.md
	systemPrompt string
	//go:embed user.md
	userText string
	userTmpl = sync.OnceValue(func() *template.Template { return template.Must(template.New("user.md").Parse(userText)) })
)

// Options configure an Extractor.
type Options struct {
	Client llm.Client
	Store  memory.Store
	// Model overrides the client's model for extraction calls.
	Model string
	// IncludeAssistant sends the assistant's replies too. Off by default:
	// mining the assistant's words stores things the user never said.
	IncludeAssistant bool
	// MaxMessages is how many recent messages are sent; default 12.
	MaxMessages int
	// MaxChars cuts each message in the middle; default 1250, and twice
	// that for the last user message.
	MaxChars int
	// MaxTokens bounds the reply; default 2000.
	MaxTokens int
	// Logger receives reports (unknown supersedes ids, failures); default
	// discards.
	Logger *slog.Logger
}

// Job is one extraction: the conversation so far, ending with the user turn
// just taken, and where the memories belong.
type Job struct {
	Chat     string
	User     string
	Messages []messages.Message
	// Load, when set, reads the conversation when a Worker runs the job,
	// instead of Messages: a queued job then mines what is stored by the
	// time it runs (Session passes its store's Load).
	Load func(context.Context) ([]messages.Message, error)
	// New is how many messages at the end of the conversation this job
	// adds (the turn just stored); a Worker meeting a chat for the first
	// time mines those. 0 means the last user message.
	New int
}

// Result says what one extraction did.
type Result struct {
	Skipped string          // why no call was made, "" when one was
	Added   []memory.Memory // what was written
	// UnknownSupersedes lists supersedes_id values the model gave that name
	// no stored memory. Their items are still stored, as new memories.
	UnknownSupersedes []string
	Duplicates        int // items equal to a stored memory, not stored again
	Invalid           int // items with empty content
	Usage             llm.Usage
}

// Output is the structured reply the model is asked for.
type Output struct {
	UserInstructions []Item `json:"user_instructions"`
	UserProfile      []Item `json:"user_profile"`
}

// Item is one memory proposed by the model.
type Item struct {
	Content      string `json:"content"`
	SupersedesID string `json:"supersedes_id"`
}

// Extractor runs extractions one call at a time.
type Extractor struct {
	opts Options
}

// New returns an Extractor.
func New(opts Options) *Extractor {
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = 12
	}
	if opts.MaxChars <= 0 {
		opts.MaxChars = 1250
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = 2000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Extractor{opts: opts}
}

// SystemPrompt is the extraction system prompt, for display.
func SystemPrompt() string { return systemPrompt }

// Schema is the JSON schema of Output.
func Schema() map[string]any {
	item := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"content":       map[string]any{"type": "string", "description": "The memory, one sentence."},
			"supersedes_id": map[string]any{"type": []any{"string", "null"}, "description": "Id of the stored memory this replaces, or null."},
		},
		"required":             []any{"content", "supersedes_id"},
		"additionalProperties": false,
	}
	list := map[string]any{"type": []any{"array", "null"}, "items": item}
	return map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"user_instructions": list, "user_profile": list},
		"required":             []any{"user_instructions", "user_profile"},
		"additionalProperties": false,
	}
}

// Extract runs one extraction for job and writes what it finds.
func (e *Extractor) Extract(ctx context.Context, job Job) (Result, error) {
	last := lastUser(job.Messages)
	if utf8.RuneCountInString(strings.TrimSpace(last)) < MinUserText {
		return Result{Skipped: "last user message is shorter than 3 characters"}, nil
	}
	existing, err := e.opts.Store.List(ctx, memory.Query{User: job.User})
	if err != nil {
		return Result{}, fmt.Errorf("extract: list memories: %w", err)
	}
	req, err := e.request(job, existing, false)
	if err != nil {
		return Result{}, err
	}
	res, err := e.opts.Client.Complete(ctx, req)
	if err != nil && llm.IsSchemaRejected(err) {
		// The endpoint has no structured output: ask for plain JSON.
		if req, err = e.request(job, existing, true); err != nil {
			return Result{}, err
		}
		res, err = e.opts.Client.Complete(ctx, req)
	}
	if err != nil {
		return Result{}, fmt.Errorf("extract: %w", err)
	}
	out, err := Parse(res.Content)
	if err != nil {
		return Result{Usage: res.Usage}, fmt.Errorf("extract: reply: %w", err)
	}
	r, err := e.persist(ctx, job, existing, out)
	r.Usage = res.Usage
	return r, err
}

func (e *Extractor) request(job Job, existing []memory.Memory, noSchema bool) (llm.Request, error) {
	var data struct {
		Messages     []messages.Message
		Instructions []memory.Memory
		Profile      []memory.Memory
		NoSchema     bool
	}
	data.NoSchema = noSchema
	data.Messages = e.recent(job.Messages)
	// Oldest first, so ids read in the order the memories were made.
	for i := len(existing) - 1; i >= 0; i-- {
		switch m := existing[i]; m.Category {
		case CategoryInstruction:
			data.Instructions = append(data.Instructions, m)
		case CategoryProfile:
			data.Profile = append(data.Profile, m)
		}
	}
	var b bytes.Buffer
	if err := userTmpl().Execute(&b, data); err != nil {
		return llm.Request{}, fmt.Errorf("extract: user.md: %w", err)
	}
	temp := 0.0
	req := llm.Request{
		Model:       e.opts.Model,
		System:      systemPrompt,
		Messages:    []messages.Message{{Role: messages.RoleUser, Content: messages.TextContent(b.String())}},
		MaxTokens:   e.opts.MaxTokens,
		Temperature: &temp,
	}
	if !noSchema {
		req.JSONSchema = &llm.JSONSchema{Name: "memories", Schema: Schema(), Strict: true}
	}
	return req, nil
}

// recent returns the last MaxMessages messages worth mining, each cut to
// MaxChars in the middle.
func (e *Extractor) recent(ms []messages.Message) []messages.Message {
	var keep []messages.Message
	lastUserAt := -1
	for _, m := range ms {
		if m.Role == messages.RoleUser || (e.opts.IncludeAssistant && m.Role == messages.RoleAssistant) {
			if strings.TrimSpace(m.Content.String()) == "" {
				continue
			}
			keep = append(keep, m)
			if m.Role == messages.RoleUser {
				lastUserAt = len(keep) - 1
			}
		}
	}
	out := make([]messages.Message, 0, e.opts.MaxMessages)
	start := max(0, len(keep)-e.opts.MaxMessages)
	for i := start; i < len(keep); i++ {
		limit := e.opts.MaxChars
		if i == lastUserAt {
			limit *= 2
		}
		out = append(out, messages.Message{Role: keep[i].Role, Content: messages.TextContent(cutMiddle(strings.TrimSpace(keep[i].Content.String()), limit))})
	}
	return out
}

func lastUser(ms []messages.Message) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == messages.RoleUser {
			return ms[i].Content.String()
		}
	}
	return ""
}

// cutMiddle keeps the head and tail of s around " … " when s has more than
// n runes.
func cutMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	half := (n - 3) / 2
	return string(r[:half]) + " … " + string(r[len(r)-half:])
}

// persist writes out in one Store.Add call. An unknown or repeated
// supersedes_id, or one naming a memory outside the job's user's own
// scope, is reported and its item stored as a new memory.
func (e *Extractor) persist(ctx context.Context, job Job, existing []memory.Memory, out Output) (Result, error) {
	var r Result
	known := map[string]bool{}
	have := map[string]bool{}
	for _, m := range existing {
		// The scope rule (see memory.ScopeError): extraction for a user may
		// replace only that user's memories, never a workspace-wide one;
		// changing those takes an explicit `loom memory add` with no user.
		// A supersedes_id naming one is reported and stored as new.
		known[m.ID] = m.User != "" && m.User == job.User
		// Stored content is kept as it was given (a person's may lack a
		// full stop): compare in extraction's form.
		if c, err := memory.Normalize(m.Content); err == nil {
			have[m.Category+"\x00"+c] = true
		}
	}
	used := map[string]bool{}
	var add []memory.NewMemory
	collect := func(items []Item, cat string) {
		for _, it := range items {
			content, err := memory.Normalize(it.Content)
			if err != nil {
				r.Invalid++
				continue
			}
			sup := strings.TrimSpace(it.SupersedesID)
			if strings.EqualFold(sup, "null") {
				sup = ""
			}
			if have[cat+"\x00"+content] && sup == "" {
				r.Duplicates++
				continue
			}
			if sup != "" && (!known[sup] || used[sup]) {
				r.UnknownSupersedes = append(r.UnknownSupersedes, sup)
				e.opts.Logger.Warn("extract: supersedes_id names no stored memory; storing the item as new",
					"chat", job.Chat, "supersedes_id", sup, "content", content)
				sup = ""
			}
			if sup != "" {
				used[sup] = true
			}
			have[cat+"\x00"+content] = true
			add = append(add, memory.NewMemory{Category: cat, Content: content, User: job.User, Chat: job.Chat, Supersedes: sup})
		}
	}
	collect(out.UserInstructions, CategoryInstruction)
	collect(out.UserProfile, CategoryProfile)
	if len(add) == 0 {
		return r, nil
	}
	added, err := e.opts.Store.Add(ctx, add...)
	if err != nil {
		return r, fmt.Errorf("extract: store: %w", err)
	}
	r.Added = added
	return r, nil
}

// ErrNoJSON means a reply held no JSON object with the expected fields.
var ErrNoJSON = errors.New("no JSON object with user_instructions or user_profile")
