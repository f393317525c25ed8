package messages

import (
	"errors"
	"fmt"

	"github.com/loomctx/loom/memory"
)

// Section names a byte range [Start, End) of the system prompt, as the
// prompt renderer reports it, so a cache diff can say which part changed.
type Section struct {
	Name  string `json:"name"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// SkillExpander expands skill references such as /name or $name in the
// current message. The skills package implements it; Build calls it once
// per turn, before the runtime block is added.
type SkillExpander interface {
	// Expand returns text with references replaced (or the skill's body
	// added) and the skills it used. An error fails the turn.
	Expand(text string) (string, []Expansion, error)
}

// Expansion is one skill reference an expander resolved.
type Expansion struct {
	// Name is the skill's name.
	Name string `json:"name"`
	// Ref is the reference as written, e.g. "/pdf" or "$pdf".
	Ref string `json:"ref"`
	// Path is the skill file, relative to the workspace when inside it.
	Path string `json:"path,omitempty"`
	// Cut is how many characters of the body were left out of its middle
	// to respect the cap; 0 when it fit.
	Cut int `json:"cut,omitempty"`
}

// Counter counts tokens; tokens.Counter satisfies it.
type Counter interface{ Count(string) int }

// Turn is everything one turn's message list is built from.
type Turn struct {
	// System is the rendered system prompt.
	System string
	// SystemSections are named byte ranges of System; optional.
	SystemSections []Section
	// History is the replayed conversation, normally cleaned by Clean.
	History []Message
	// Message is the current message's text.
	Message string
	// Role is the current message's role: user (the default) or assistant.
	Role Role
	// Media are image paths to attach to the current message.
	Media []string
	// Runtime is the metadata added to the current message.
	Runtime Runtime
	// Skills expands skill references in Message; nil leaves it as is.
	Skills SkillExpander
	// Recall, when set, holds the memories chosen for this turn by
	// relevance (prompt.Builder.Recall). They go into the runtime block,
	// beside the current message, so the system prompt stays the same
	// from turn to turn; the report lists them with their scores.
	Recall *memory.Recall
}

// DefaultMinCacheTokens is the smallest prefix worth caching. It varies by
// provider and model (OpenAI caches from 1024 tokens; Anthropic needs 1024
// to 4096 depending on the model), so callers should set it for theirs.
const DefaultMinCacheTokens = 1024

// Options tunes Build.
type Options struct {
	Media MediaLimits
	// Counter counts the prefix's tokens; nil leaves Prefix.Tokens at 0 and
	// skips the minimum-size warning.
	Counter Counter
	// MinCacheTokens is the provider's minimum cacheable prefix; 0 means
	// DefaultMinCacheTokens.
	MinCacheTokens int
}

// Result is a built turn: the messages, the system message first, and what
// the build saw.
type Result struct {
	Messages []Message
	Report   Report
}

// ErrEmptyMessage is returned when the current message has no text, no
// image and no runtime block.
var ErrEmptyMessage = errors.New("current message is empty")

// Build assembles one turn. The history is copied, never changed; if it ends
// with a message of the current role, the current message is merged into it
// so providers that reject two same-role messages in a row accept the list.
// Images that cannot be sent are dropped and reported, never silently.
func Build(t Turn, opts Options) (*Result, error) {
	role := t.Role
	if role == "" {
		role = RoleUser
	}
	if role != RoleUser && role != RoleAssistant {
		return nil, fmt.Errorf("current message: role %q: want user or assistant", role)
	}
	for i, m := range t.History {
		if err := checkHistoryMessage(m); err != nil {
			return nil, fmt.Errorf("history message %d: %w", i, err)
		}
	}
	rep := Report{Expansions: []Expansion{}}
	text := t.Message
	if t.Skills != nil {
		expanded, exps, err := t.Skills.Expand(text)
		if err != nil {
			return nil, fmt.Errorf("current message: skills: %w", err)
		}
		text = expanded
		rep.Expansions = append(rep.Expansions, exps...)
	}
	images, attached, dropped := LoadImages(t.Media, opts.Media)
	rep.Media = nonNil(attached)
	rep.DroppedMedia = nonNil(dropped)

	block := ""
	if !t.Runtime.Omit {
		rt := t.Runtime
		rt.Memories = t.Recall.Lines()
		block = RuntimeBlock(rt)
		rep.Recall = t.Recall
	}
	cur := Message{Role: role, Content: currentContent(text, block, images, t.Runtime.Placement)}
	if cur.Content.IsEmpty() {
		return nil, ErrEmptyMessage
	}

	msgs := make([]Message, 0, len(t.History)+2)
	msgs = append(msgs, Message{Role: RoleSystem, Content: TextContent(t.System)})
	msgs = append(msgs, t.History...)
	stable := len(t.History)
	if n := len(t.History); n > 0 && t.History[n-1].Role == role {
		last := t.History[n-1]
		if len(last.ToolCalls) > 0 {
			return nil, fmt.Errorf("history message %d: assistant tool calls without results; clean the history first", n-1)
		}
		last = last.clone()
		last.Content = mergeContent(last.Content, cur.Content)
		msgs[len(msgs)-1] = last
		stable--
		rep.Merged = true
	} else {
		msgs = append(msgs, cur)
	}

	if err := rep.fillPrefix(t.System, t.SystemSections, t.History[:stable], opts); err != nil {
		return nil, err
	}
	return &Result{Messages: msgs, Report: rep}, nil
}

// currentContent lays out the current message. Images come first, as
// providers recommend; the runtime block is its own text part so Clean can
// drop it whole.
func currentContent(text, block string, images []Image, p Placement) Content {
	if len(images) == 0 {
		return TextContent(attachRuntime(text, block, p))
	}
	parts := make([]Part, 0, len(images)+2)
	if block != "" && p == PlaceBefore {
		parts = append(parts, Part{Type: PartText, Text: block})
	}
	for i := range images {
		parts = append(parts, Part{Type: PartImage, Image: &images[i]})
	}
	if text != "" {
		parts = append(parts, Part{Type: PartText, Text: text})
	}
	if block != "" && p != PlaceBefore {
		parts = append(parts, Part{Type: PartText, Text: block})
	}
	return Content{Parts: parts}
}

// mergeContent appends b to a: text to text with a blank line between,
// otherwise part lists.
func mergeContent(a, b Content) Content {
	switch {
	case a.IsEmpty():
		return b
	case !a.IsList() && !b.IsList():
		return TextContent(a.Text + blockSep + b.Text)
	}
	parts := append(asParts(a), asParts(b)...)
	return Content{Parts: parts}
}

func asParts(c Content) []Part {
	if c.IsList() {
		return append([]Part(nil), c.Parts...)
	}
	if c.Text == "" {
		return nil
	}
	return []Part{{Type: PartText, Text: c.Text}}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// AppendAssistant appends an assistant reply to msgs: its text, the tool
// calls it makes and its reasoning text, each when present. A call needs an
// id and a function name; the previous assistant's calls must all have
// results first.
func AppendAssistant(msgs []Message, content string, calls []ToolCall, reasoning string) ([]Message, error) {
	if pending := pendingCalls(msgs); len(pending) > 0 {
		return msgs, fmt.Errorf("tool call %q has no result yet", pending[0])
	}
	if content == "" && len(calls) == 0 {
		return msgs, errors.New("assistant message has no content and no tool calls")
	}
	m := Message{Role: RoleAssistant, Content: TextContent(content)}.WithReasoning(reasoning)
	seen := make(map[string]bool, len(calls))
	for i, tc := range calls {
		if tc.ID == "" || tc.Function.Name == "" {
			return msgs, fmt.Errorf("tool call %d: id and function name are required", i)
		}
		if seen[tc.ID] {
			return msgs, fmt.Errorf("tool call %d: duplicate id %q", i, tc.ID)
		}
		seen[tc.ID] = true
		if tc.Type == "" {
			tc.Type = "function"
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	return append(msgs, m), nil
}

// AppendToolResult appends the result of a tool call. The call must be one
// of the last assistant message's calls that has no result yet, so calls and
// results stay together.
func AppendToolResult(msgs []Message, callID, name, result string) ([]Message, error) {
	for _, id := range pendingCalls(msgs) {
		if id == callID {
			m := Message{Role: RoleTool, Content: TextContent(result)}.WithToolCallID(callID).WithName(name)
			return append(msgs, m), nil
		}
	}
	return msgs, fmt.Errorf("tool result for %q: no pending tool call with that id", callID)
}

// pendingCalls lists the last assistant message's call ids that the tool
// messages after it have not answered.
func pendingCalls(msgs []Message) []string {
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == RoleTool {
		i--
	}
	if i < 0 || msgs[i].Role != RoleAssistant {
		return nil
	}
	answered := make(map[string]bool)
	for _, m := range msgs[i+1:] {
		answered[m.ToolCallID()] = true
	}
	var pending []string
	for _, tc := range msgs[i].ToolCalls {
		if !answered[tc.ID] {
			pending = append(pending, tc.ID)
		}
	}
	return pending
}
