package inspector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// View is everything the page shows about one render.
type View struct {
	Workspace   string
	Query       string // the options as a query string, for links and forms
	Opts        Controls
	Encoding    string
	Preset      string
	Tokens      int
	Budget      int // 0 when none
	SHA256      string
	Sections    []Section
	Bar         []Segment
	Diagnostics []workspace.Diagnostic
	Skills      []SkillRow
	Memory      MemoryView
	Error       string // a render error shown on the page
	Pins        []Pin
	FormToken   string // sent back with the page's forms (server.FormToken)
}

// Controls are the render options the page lets a user change.
type Controls struct {
	Channel  string
	User     string
	Budget   int
	Encoding string
	Model    string
	TestMode bool
	Tools    string // comma-separated; "" means all
	Subagent bool
	// Message is a current message to recall memories for, as a turn
	// would with memory.retrieval: relevant; "" recalls nothing.
	Message string
}

// Section is one top-level section of the prompt, with its nested parts.
type Section struct {
	md.Entry
	Text  string // exact text; "" when dropped
	Parts []md.Entry
	// DroppedTokens is what the dropped parts inside the section would
	// have cost.
	DroppedTokens int
	DroppedParts  int
}

// Segment is one stretch of the token bar.
type Segment struct {
	Name    string
	Status  string // kept, truncated, dropped
	Tokens  int
	Percent float64
	Title   string // hover text
}

// SkillRow is one skill in the skills tab.
type SkillRow struct {
	Name, Location, Status, Missing, Description string
	Available, Always, InPrompt                  bool
}

// MemoryView is the memory tab: what the prompt selected and what it left
// out.
type MemoryView struct {
	Budget   int
	Tokens   int
	Selected []memory.Memory
	LeftOut  []LeftOut
	Error    string
	Cats     []memory.Category
	// Relevant is memory.retrieval: relevant; Recall is what the
	// Message control recalls then (nil without a message).
	Relevant bool
	Recall   *memory.Recall
}

// LeftOut is a memory the prompt left out, and why.
type LeftOut struct {
	Memory memory.Memory
	Reason string
}

// options turns the controls into prompt options.
func (c Controls) options() prompt.Options {
	o := prompt.Options{Channel: c.Channel, User: c.User, Budget: c.Budget, Encoding: c.Encoding, Model: c.Model,
		TestMode: c.TestMode, Subagent: c.Subagent}
	if c.Tools != "" {
		o.Tools = []string{}
		for _, t := range strings.Split(c.Tools, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.Tools = append(o.Tools, t)
			}
		}
	}
	return o
}

// query writes the controls as a query string.
func (c Controls) query() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+urlEscape(v))
		}
	}
	add("channel", c.Channel)
	add("user", c.User)
	if c.Budget > 0 {
		add("budget", strconv.Itoa(c.Budget))
	}
	add("encoding", c.Encoding)
	add("model", c.Model)
	if c.TestMode {
		add("test_mode", "1")
	}
	add("tools", c.Tools)
	if c.Subagent {
		add("subagent", "1")
	}
	add("message", c.Message)
	return strings.Join(parts, "&")
}

// sections groups the report's entries: an entry whose name holds a colon
// ("skill:pdf") belongs to the top-level section before it.
func sections(res *prompt.Result) []Section {
	var out []Section
	for _, e := range res.Report.Sections() {
		if nested(e) && len(out) > 0 {
			s := &out[len(out)-1]
			s.Parts = append(s.Parts, e)
			if e.Status == md.Dropped {
				s.DroppedTokens += e.Tokens
				s.DroppedParts++
			}
			continue
		}
		s := Section{Entry: e}
		if e.Start >= 0 && e.End <= len(res.Prompt) && e.Start <= e.End {
			s.Text = res.Prompt[e.Start:e.End]
		}
		out = append(out, s)
	}
	return out
}

// nested reports whether an entry lies inside the top-level section before
// it. The report is in document order and locates only top-level text, so
// an entry with no location is nested, unless it is a dropped section of its
// own; a part name holds a colon ("skill:pdf").
func nested(e md.Entry) bool {
	if strings.Contains(e.Name, ":") {
		return true
	}
	return e.Start < 0 && e.Status != md.Dropped
}

// bar lays the sections out to scale: each kept or truncated section, then
// what it dropped, and each dropped section at what it would have cost.
func bar(secs []Section) []Segment {
	var segs []Segment
	total := 0
	for _, s := range secs {
		total += s.Tokens + s.DroppedTokens
	}
	if total == 0 {
		return nil
	}
	pct := func(n int) float64 { return float64(n) * 100 / float64(total) }
	for _, s := range secs {
		prio := "none (never dropped)"
		if s.Priority != nil {
			prio = strconv.Itoa(*s.Priority)
		}
		src := "loom's own text"
		if len(s.Sources) > 0 {
			src = strings.Join(s.Sources, ", ")
		}
		if s.Tokens > 0 {
			segs = append(segs, Segment{Name: s.Name, Status: string(s.Status), Tokens: s.Tokens, Percent: pct(s.Tokens),
				Title: fmt.Sprintf("%s: %d tokens, %s, priority %s, from %s", s.Name, s.Tokens, s.Status, prio, src)})
		}
		if s.DroppedTokens > 0 {
			segs = append(segs, Segment{Name: s.Name + " (dropped parts)", Status: string(md.Dropped), Tokens: s.DroppedTokens, Percent: pct(s.DroppedTokens),
				Title: fmt.Sprintf("%s: %d parts dropped, %d tokens", s.Name, s.DroppedParts, s.DroppedTokens)})
		}
	}
	return segs
}

func skillRows(set *skills.Set, secs []Section) []SkillRow {
	in := map[string]bool{}
	var active string
	for _, s := range secs {
		if s.Status == md.Dropped {
			continue
		}
		if s.Name == "active-skills" {
			active = s.Text
		}
		for _, p := range s.Parts {
			if name, ok := strings.CutPrefix(p.Name, "skill:"); ok && p.Status != md.Dropped {
				in[name] = true
			}
		}
	}
	var rows []SkillRow
	for _, sk := range set.Skills {
		r := SkillRow{Name: sk.Name, Location: sk.Location, Status: string(sk.Status), Missing: sk.MissingText(),
			Description: sk.Description(), Available: sk.Available, Always: sk.Always()}
		r.InPrompt = in[sk.Name] || (sk.Always() && strings.Contains(active, "Skill: "+sk.Name+"\n"))
		rows = append(rows, r)
	}
	return rows
}

// memoryView selects memories as the render did, to show what was chosen and
// what was left out.
func memoryView(ctx context.Context, ws *workspace.Workspace, c Controls, encoding string) MemoryView {
	var mv MemoryView
	cfg, err := config.Load(ws)
	if err != nil {
		mv.Error = err.Error()
		return mv
	}
	mv.Cats = memory.CategoriesOf(cfg)
	path, err := config.MemoryStoreLocation(ws.Root(), cfg)
	if err != nil {
		mv.Error = err.Error()
		return mv
	}
	budget := cfg.Memory.Budget
	if budget == 0 {
		budget = config.DefaultMemoryBudget
	}
	mv.Relevant = cfg.Memory.Relevant()
	if mv.Relevant { // the system prompt's share, as the render has it
		budget -= prompt.RecallShare(budget)
	}
	counter, err := tokens.Get(encoding)
	if err != nil {
		counter, _ = tokens.Get(tokens.Default)
	}
	sel, err := memory.SelectStored(ctx, path, memory.Query{User: c.User}, mv.Cats, budget, counter, memory.SelectOptions{})
	if err != nil {
		mv.Error = err.Error()
		return mv
	}
	mv.Budget, mv.Tokens = sel.Budget, sel.Tokens
	for _, g := range sel.Groups {
		mv.Selected = append(mv.Selected, g.Memories...)
	}
	for _, l := range sel.LeftOut {
		if l.Memory != nil {
			mv.LeftOut = append(mv.LeftOut, LeftOut{Memory: *l.Memory, Reason: string(l.Reason)})
		}
	}
	return mv
}

// scoreText shows a recalled memory's score: a store's relevance, or 0
// for a memory chosen by priority order.
func scoreText(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
