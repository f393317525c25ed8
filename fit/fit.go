// Package fit makes one turn's message list fit a model's context window.
//
// A client re-sends its whole conversation every turn, and loom adds its
// system prompt on top; past the window the provider refuses the request
// or cuts it. [Fit] counts the list with loom's tokenizer and, when the
// system prompt, the tool definitions, the history and the current message
// come to more than the window less the reserve for the reply, leaves out
// the oldest history in whole units: a user message with everything up to
// the next one, so a tool call never loses its result and a result never
// loses its call. One short note stands where they were, with the latest
// conversation-log entries that summarise them when the caller has them.
// The system prompt, the tool definitions and the current message (the
// last user message and everything after it) are never dropped.
//
// History goes in steps of a fifth of the budget (see Options.Step),
// measured from the start of the conversation, so the kept history starts
// at the same message turn after turn until the next step: consecutive
// requests share their prefix, and the provider's prompt cache keeps
// hitting.
//
// When even an empty history leaves too much, the system prompt is
// rendered again within the room left (Options.ShrinkSystem; the render
// budget drops retrieved memories, then skills, then priority memories),
// then the note goes, then the largest message of the current turn is cut
// in its middle. The [Report] says what went and why.
//
// Tokens are counted exactly for text; the framing a provider adds around
// each message is OpenAI's published figure (see [MessageTokens]), and an
// image counts as [ImageTokens], a bound rather than a count.
package fit

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/loomctx/loom/internal/template"
	"github.com/loomctx/loom/messages"
)

// Defaults of Options.
const (
	// DefaultReserve is the reply's room when the request names no
	// max_tokens: llm.reserve_output's default.
	DefaultReserve = 4096
	// DefaultStep is the share of the budget history is dropped by at a
	// time: a fitted request comes back to at most 80% of it.
	DefaultStep = 0.2
	// DefaultNoteBudget bounds the note's conversation-log entries.
	DefaultNoteBudget = 512
)

// The framing a provider adds: OpenAI's cookbook counts 3 tokens a
// message, 1 more for a name, and 3 that prime the reply. Anthropic
// publishes no figure; its framing is of the same size.
const (
	PerMessage   = 3
	PerName      = 1
	ReplyPriming = 3
	// ImageTokens is what one image is counted as: about the most a
	// provider charges for one (Anthropic scales images to about 1.15
	// megapixels, some 1,600 tokens; OpenAI's high detail 1024×1024 is
	// 765).
	ImageTokens = 1600
)

// Options say what to fit into.
type Options struct {
	// Window is the model's context window, in tokens. 0 means none is
	// known: the list is counted (Report.Tokens) and returned as is.
	Window int
	// Reserve is kept free for the reply: the request's max_tokens, else
	// llm.reserve_output; 0 means DefaultReserve.
	Reserve int
	// Counter counts tokens; required.
	Counter messages.Counter
	// Tools is what the request's tool definitions cost, counted by the
	// caller (see Tokens); they are never dropped.
	Tools int
	// SystemTokens is the system message's text as already counted; 0
	// counts it here.
	SystemTokens int
	// Step is the share of the budget history is dropped by at a time;
	// 0 means DefaultStep.
	Step float64
	// Summaries returns conversation-log (HISTORY.md) entries, oldest
	// first, that summarise the start of the history; the note carries
	// the latest of them that fit in NoteBudget tokens. It is called only
	// when history is dropped; nil means none.
	Summaries func() []string
	// SummariesPrecede says the summaries cover the conversation before
	// the history given, not its start: a session replays only what
	// consolidation has not summarised, so what fitting drops there is
	// not in the log, and the note says the entries come before it.
	SummariesPrecede bool
	// NoteBudget bounds the summaries in the note; 0 means
	// DefaultNoteBudget.
	NoteBudget int
	// ShrinkSystem renders the system prompt again within room tokens,
	// when even an empty history leaves too much, and names its sections.
	// Nil keeps it as it is.
	ShrinkSystem func(room int) (string, []messages.Section, error)
}

// Report says what Fit did.
type Report struct {
	Window  int `json:"window"`
	Reserve int `json:"reserve"`
	// Budget is Window less Reserve: what the request may cost.
	Budget int `json:"budget"`
	// Before and Tokens are what the request cost before and after
	// fitting: messages with their framing, and the tool definitions.
	Before int `json:"tokens_before"`
	Tokens int `json:"tokens"`
	// Dropped counts the history messages left out, Units the units
	// (a user message and what follows it) they made.
	Dropped int `json:"history_dropped"`
	Units   int `json:"units_dropped"`
	// Note is set when the note stands where history was dropped;
	// Summaries counts the log entries in it.
	Note      bool `json:"note,omitempty"`
	Summaries int  `json:"summaries,omitempty"`
	// SystemRoom is the budget the system prompt was rendered again
	// within; 0 when it was not.
	SystemRoom int `json:"system_room,omitempty"`
	// Cut counts messages of the current turn cut in their middle.
	Cut int `json:"messages_cut,omitempty"`
	// Over is how far the fitted request is still over Budget: what was
	// never to be dropped (tool definitions, a system prompt that could
	// not shrink) is too large.
	Over int `json:"over,omitempty"`
	// Reasons say what went and why, in the order it went.
	Reasons []string `json:"reasons"`
}

// Changed reports whether Fit left out or cut anything.
func (r *Report) Changed() bool {
	return r.Dropped > 0 || r.SystemRoom > 0 || r.Cut > 0
}

// Result is a fitted message list and what fitting did.
type Result struct {
	// Messages is the list to send. It is the input slice itself when the
	// request fits; otherwise a new slice sharing the messages kept
	// unchanged.
	Messages []messages.Message
	Report   Report
	// Note is the note that stands where history was dropped, when
	// Report.Note is set.
	Note messages.Message
	// SystemSections are the sections of a system prompt rendered again.
	SystemSections []messages.Section
}

// History returns what stands for history in the fitted list: the note,
// then history less the messages dropped. history is the history as the
// caller had it, the messages between the system message and the current
// turn that Fit was given.
func (r *Result) History(history []messages.Message) []messages.Message {
	kept := history[min(r.Report.Dropped, len(history)):]
	if !r.Report.Note {
		return kept
	}
	return append([]messages.Message{r.Note}, kept...)
}

// ErrNoRoom is returned when the reserve for the reply takes the whole
// window.
var ErrNoRoom = errors.New("no room for the prompt")

var (
	//go:embed note.tmpl
	noteText string
	noteTmpl = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("note").Parse(noteText))
	})
)

// Fit fits msgs, a turn's message list with its system message first (if
// any), into the window opts describe. The current turn starts at the last
// user message; the history is what lies between the system message and
// it. msgs is never changed.
func Fit(msgs []messages.Message, opts Options) (*Result, error) {
	if opts.Window < 0 {
		return nil, fmt.Errorf("fit: context window of %d tokens", opts.Window)
	}
	if opts.Counter == nil {
		return nil, errors.New("fit: no token counter")
	}
	if opts.Reserve <= 0 {
		opts.Reserve = DefaultReserve
	}
	if opts.Step <= 0 || opts.Step >= 1 {
		opts.Step = DefaultStep
	}
	if opts.NoteBudget <= 0 {
		opts.NoteBudget = DefaultNoteBudget
	}
	rep := Report{Window: opts.Window, Reserve: opts.Reserve, Budget: opts.Window - opts.Reserve, Reasons: []string{}}
	if opts.Window == 0 {
		rep.Reserve, rep.Budget = 0, 0
		rep.Tokens = Tokens(opts.Counter, msgs, opts.Tools) // no window: counted, never fitted
		if len(msgs) > 0 && msgs[0].Role == messages.RoleSystem && opts.SystemTokens > 0 {
			rep.Tokens += opts.SystemTokens - count(opts.Counter, msgs[0].Content.Text)
		}
		rep.Before = rep.Tokens
		return &Result{Messages: msgs, Report: rep}, nil
	}
	if rep.Budget <= 0 {
		return nil, fmt.Errorf("%w: %d tokens kept for the reply leave nothing of a %d-token context window", ErrNoRoom, opts.Reserve, opts.Window)
	}
	f := &fitter{opts: opts, c: opts.Counter, msgs: msgs, rep: &rep}
	f.measure()
	rep.Before = f.total(0, 0)
	if rep.Before <= rep.Budget {
		rep.Tokens = rep.Before
		return &Result{Messages: msgs, Report: rep}, nil
	}
	res := &Result{Report: rep}
	res.Messages = f.fit(res)
	res.Report = rep
	return res, nil
}

// fitter is one Fit call's state.
type fitter struct {
	opts Options
	c    messages.Counter
	msgs []messages.Message
	rep  *Report

	sys   int   // 1 when msgs[0] is the system message
	tail  int   // where the current turn starts
	costs []int // each message's tokens
	// units are the history's units by their first message's index, and
	// offsets their first token, counted from the history's start.
	units   []int
	offsets []int
	history int // the history's tokens
	fixed   int // what is never dropped: system, tools, current turn, priming
}

// measure counts every message and splits the history into units.
func (f *fitter) measure() {
	msgs := f.msgs
	if len(msgs) > 0 && msgs[0].Role == messages.RoleSystem {
		f.sys = 1
	}
	f.tail = currentStart(msgs)
	f.costs = make([]int, len(msgs))
	for i, m := range msgs {
		if i == 0 && f.sys == 1 && f.opts.SystemTokens > 0 {
			f.costs[i] = PerMessage + f.c.Count(string(m.Role)) + f.opts.SystemTokens
			continue
		}
		f.costs[i] = MessageTokens(f.c, m)
	}
	f.fixed = ReplyPriming + f.opts.Tools
	if f.sys == 1 {
		f.fixed += f.costs[0]
	}
	for _, n := range f.costs[f.tail:] {
		f.fixed += n
	}
	for i := f.sys; i < f.tail; i++ {
		// A unit starts at each user message; what comes before the first
		// one (a history that opens with the assistant) is a unit too.
		if i == f.sys || msgs[i].Role == messages.RoleUser {
			f.units = append(f.units, i)
			f.offsets = append(f.offsets, f.history)
		}
		f.history += f.costs[i]
	}
}

// total is what the request costs keeping the units from k on, with a
// note of noteCost tokens.
func (f *fitter) total(k, noteCost int) int {
	if k >= len(f.units) {
		return f.fixed + noteCost
	}
	return f.fixed + f.history - f.offsets[k] + noteCost
}

// dropped is how many history messages go when units before k do.
func (f *fitter) dropped(k int) int {
	if k >= len(f.units) {
		return f.tail - f.sys
	}
	return f.units[k] - f.sys
}

func (f *fitter) fit(res *Result) []messages.Message {
	rep, budget := f.rep, f.rep.Budget
	step := max(int(float64(budget)*f.opts.Step), 1)
	// The history goes in steps: at step m every unit that starts before
	// m·step tokens into the conversation goes, so the first unit kept
	// stays the same until the history has grown by a step.
	k := 0
	var note string
	var summaries, noteCost int
	var entries []string
	if f.opts.Summaries != nil && len(f.units) > 0 {
		entries = f.opts.Summaries()
	}
	for m := 1; k < len(f.units); m++ {
		next := k
		for next < len(f.units) && f.offsets[next] < m*step {
			next++
		}
		if next == k {
			continue
		}
		k = next
		note, summaries = f.note(f.dropped(k), entries)
		noteCost = MessageTokens(f.c, noteMessage(note))
		if f.total(k, noteCost) <= budget {
			break
		}
	}
	if k > 0 {
		rep.Dropped, rep.Units = f.dropped(k), k
		rep.Note, rep.Summaries = true, summaries
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("left out the %d oldest history messages (%d %s, %d tokens): the request came to %d tokens, over the %d that a %d-token window leaves beside %d for the reply",
			rep.Dropped, k, plural(k, "unit", "units"), f.history-f.kept(k), rep.Before, budget, rep.Window, rep.Reserve))
	}

	system := ""
	if f.sys == 1 {
		system = f.msgs[0].Content.String()
	}
	tail := f.msgs[f.tail:]
	cut := -1 // the current turn's message cut, by index in tail
	var cutMsg messages.Message

	// Not enough with the whole history gone: the system prompt, then the
	// note's summaries, then the note, then a cut.
	if f.total(k, noteCost) > budget && f.sys == 1 && f.opts.ShrinkSystem != nil {
		sysCost := f.costs[0]
		room := budget - (f.total(k, noteCost) - sysCost) - (sysCost - f.c.Count(system))
		if room < 0 {
			room = 0
		}
		if s, secs, err := f.opts.ShrinkSystem(room); err != nil {
			rep.Reasons = append(rep.Reasons, "the system prompt could not be rendered again within "+itoa(room)+" tokens: "+err.Error())
		} else {
			newCost := PerMessage + f.c.Count(string(messages.RoleSystem)) + f.c.Count(s)
			rep.Reasons = append(rep.Reasons, fmt.Sprintf("system prompt rendered again within %d tokens (%d → %d); its render report names the sections dropped", room, sysCost, newCost))
			f.fixed += newCost - sysCost
			f.costs[0] = newCost
			system = s
			res.SystemSections = secs
			rep.SystemRoom = max(room, 1)
		}
	}
	if f.total(k, noteCost) > budget && summaries > 0 {
		note, _ = f.note(rep.Dropped, nil)
		noteCost = MessageTokens(f.c, noteMessage(note))
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("the note's %d conversation-log %s left out", summaries, plural(summaries, "entry", "entries")))
		rep.Summaries = 0
	}
	if f.total(k, noteCost) > budget && note != "" {
		note, noteCost = "", 0
		rep.Note = false
		rep.Reasons = append(rep.Reasons, "the note on the dropped history left out")
	}
	if over := f.total(k, noteCost) - budget; over > 0 && len(tail) > 0 {
		// The largest message of the current turn gives up what is over.
		big := 0
		for i := range tail {
			if f.costs[f.tail+i] > f.costs[f.tail+big] {
				big = i
			}
		}
		if m, ok := cutMessage(f.c, tail[big], f.costs[f.tail+big]-over); ok {
			newCost := MessageTokens(f.c, m)
			rep.Reasons = append(rep.Reasons, fmt.Sprintf("message %d of the current turn cut in its middle, %d → %d tokens", big, f.costs[f.tail+big], newCost))
			f.fixed += newCost - f.costs[f.tail+big]
			cut, cutMsg = big, m
			rep.Cut = 1
		}
	}

	out := make([]messages.Message, 0, 1+len(f.msgs)-f.dropped(k)+1)
	if f.sys == 1 {
		sm := f.msgs[0]
		if rep.SystemRoom > 0 {
			sm.Content = messages.TextContent(system)
		}
		out = append(out, sm)
	}
	if note != "" {
		res.Note = noteMessage(note)
		out = append(out, res.Note)
	}
	if k < len(f.units) {
		out = append(out, f.msgs[f.units[k]:f.tail]...)
	}
	for i, m := range tail {
		if i == cut {
			m = cutMsg
		}
		out = append(out, m)
	}
	rep.Tokens = f.total(k, noteCost)
	rep.Over = max(rep.Tokens-budget, 0)
	if rep.Over > 0 {
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("still %d tokens over: the system prompt, the tool definitions (%d tokens) and the current turn are all that is left", rep.Over, f.opts.Tools))
	}
	return out
}

// kept is the history's tokens from unit k on.
func (f *fitter) kept(k int) int {
	if k >= len(f.units) {
		return 0
	}
	return f.history - f.offsets[k]
}

// note writes the note for n dropped messages with the latest summaries
// that fit in the note budget, and says how many it took.
func (f *fitter) note(n int, summaries []string) (string, int) {
	first, room := len(summaries), f.opts.NoteBudget
	for first > 0 {
		cost := f.c.Count(summaries[first-1]) + 2
		if cost > room {
			break
		}
		room -= cost
		first--
	}
	var b strings.Builder
	entries := summaries[first:]
	if err := noteTmpl().Execute(&b, struct {
		Dropped int
		Entries []string
		Precede bool
	}{n, entries, f.opts.SummariesPrecede}); err != nil {
		// The template is loom's own and its data plain values.
		panic("fit: note template: " + err.Error())
	}
	return b.String(), len(entries)
}

func noteMessage(text string) messages.Message {
	return messages.Message{Role: messages.RoleUser, Content: messages.TextContent(text)}
}

// cutMessage cuts the largest text of m in its middle so that m costs at
// most limit tokens; false when it has no text to cut or cannot get there.
func cutMessage(c messages.Counter, m messages.Message, limit int) (messages.Message, bool) {
	over := MessageTokens(c, m) - limit
	if over <= 0 {
		return m, false
	}
	if !m.Content.IsList() {
		own := c.Count(m.Content.Text)
		if own <= over {
			return m, false
		}
		m.Content = messages.TextContent(messages.CutMiddle(m.Content.Text, own-over, c))
		return m, MessageTokens(c, m) <= limit
	}
	big, bigCost := -1, 0
	for i, p := range m.Content.Parts {
		if p.Type == messages.PartText {
			if n := c.Count(p.Text); n > bigCost {
				big, bigCost = i, n
			}
		}
	}
	if big < 0 || bigCost <= over {
		return m, false
	}
	parts := append([]messages.Part(nil), m.Content.Parts...)
	parts[big].Text = messages.CutMiddle(parts[big].Text, bigCost-over, c)
	m.Content = messages.Content{Parts: parts}
	return m, MessageTokens(c, m) <= limit
}

// MessageTokens is what a message costs in a request: its role, text, name,
// tool call id, tool calls (id, name and arguments) and reasoning text,
// counted exactly, plus PerMessage of framing (and PerName for a name) and
// ImageTokens for each image.
func MessageTokens(c messages.Counter, m messages.Message) int {
	n := PerMessage + count(c, string(m.Role))
	if m.Content.IsList() {
		for _, p := range m.Content.Parts {
			if p.Type == messages.PartImage {
				n += ImageTokens
			} else {
				n += count(c, p.Text)
			}
		}
	} else {
		n += count(c, m.Content.Text)
	}
	if m.Name() != "" {
		n += PerName + count(c, m.Name())
	}
	n += count(c, m.ToolCallID())
	for _, tc := range m.ToolCalls {
		n += count(c, tc.ID) + count(c, tc.Function.Name) + count(c, tc.Function.Arguments)
	}
	return n + count(c, m.Reasoning())
}

// Tokens is what a request of msgs costs with tool definitions of tools
// tokens: every message's MessageTokens, the tools and ReplyPriming. A
// fitted request's Report.Tokens is this figure.
func Tokens(c messages.Counter, msgs []messages.Message, tools int) int {
	n := ReplyPriming + tools
	for _, m := range msgs {
		n += MessageTokens(c, m)
	}
	return n
}

// count skips the counter for an empty text, the common case for most of
// a message's fields.
func count(c messages.Counter, s string) int {
	if s == "" {
		return 0
	}
	return c.Count(s)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func itoa(n int) string { return fmt.Sprint(n) }
