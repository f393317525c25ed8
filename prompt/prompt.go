// Package prompt builds an agent's system prompt from its workspace folder.
//
// A [Builder] reads the workspace through its door (see package workspace),
// picks a preset — [Assistant], nanobot's structure, or [Analyst], nao's —
// and renders a tree of sections with package md, within a token budget when
// one is set. Each section is an ordinary function returning an md.Node, and
// each top-level section is a named md scope, so a workspace override can
// place one with {{ section:NAME }} and the report can say what every section
// cost.
//
// Workspace text (bootstrap files, RULES.md, memories, skills, overrides) is
// put in as md.Text; loom's own wording lives in embedded files under text/.
package prompt

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// Presets.
const (
	Assistant = "assistant"
	Analyst   = "analyst"
)

// Options are the inputs of one render besides the workspace. Zero values
// mean "as loom.yaml says, else the default".
type Options struct {
	Preset   string // "", Assistant or Analyst
	Channel  string // slack, whatsapp, …: picks an override file and a wrapper
	ChatURL  string // adds the conversation-link section
	Fork     *Fork  // adds the selection-context section
	Subagent bool   // the smaller prompt for a subagent

	Now      time.Time // the analyst's date; zero means the clock
	Timezone string    // IANA zone for the date
	TestMode bool      // leaves out the clarification rule
	// Tools are the tools the agent has: each gets its rule section, and
	// the analyst's Tool Calls bullets name only these. nil means
	// loom.yaml's tools:, else for the analyst nao's default set (what
	// nao's own agent has: see README), else none.
	Tools []string

	User         string // whose memories to select; "" is the workspace scope
	ChatID       string // the current chat, left out of memory when configured
	MemoryBudget int    // tokens for structured memories

	Budget   int    // total token budget; 0 means none
	Encoding string // o200k_base, cl100k_base or chars4
	Model    string // picks the encoding when Encoding is empty

	GOOS, GOARCH string // the runtime shown to the assistant; default this process's

	// NoCounts skips counting tokens for the report when there is no budget,
	// for callers that want the prompt text alone (loom render without
	// --report): the report's token figures are then zero.
	NoCounts bool
}

// Fork is the conversation a chat was forked from, with the passage the user
// selected.
type Fork struct {
	Title     string `json:"title"`
	Author    string `json:"author"`
	Selection string `json:"selection"`
}

// Result is a rendered prompt and its report.
type Result struct {
	Prompt string `json:"prompt"`
	Report Report `json:"report"`

	// recall is what Builder.Recall needs of the render; nil when
	// memory.retrieval is not relevant or the render had no memories.
	recall *recallPlan
}

// Report is what a render cost and what it left out. Its JSON shape is the
// one `loom render --format json` prints: encoding, tokens, budget, preset,
// sections, diagnostics.
type Report struct {
	Encoding    string
	Tokens      int
	Budget      *int
	Preset      string
	Diagnostics []workspace.Diagnostic
	// lines holds the sections, made when first asked for (see
	// md.Report.Sections).
	lines md.Report
}

// Sections returns a line for every named part of the prompt and every part
// that was dropped or cut, in document order. The first call makes them
// (a large workspace's thousands of memories make many); the slice is
// shared and must not be changed. It is safe to call concurrently.
func (r Report) Sections() []md.Entry { return r.lines.Sections() }

// SetSections sets the report's lines.
func (r *Report) SetSections(sections []md.Entry) { r.lines = md.NewReport(0, nil, sections) }

type reportJSON struct {
	Encoding    string                 `json:"encoding"`
	Tokens      int                    `json:"tokens"`
	Budget      *int                   `json:"budget"`
	Preset      string                 `json:"preset"`
	Sections    []md.Entry             `json:"sections"`
	Diagnostics []workspace.Diagnostic `json:"diagnostics"`
}

// MarshalJSON encodes the report with its sections.
func (r Report) MarshalJSON() ([]byte, error) {
	return md.MarshalJSONAs(reportJSON{r.Encoding, r.Tokens, r.Budget, r.Preset, r.Sections(), r.Diagnostics})
}

// UnmarshalJSON decodes what MarshalJSON encodes, refusing unknown fields.
func (r *Report) UnmarshalJSON(data []byte) error {
	var v reportJSON
	if err := md.UnmarshalJSONStrict(data, &v); err != nil {
		return err
	}
	*r = Report{Encoding: v.Encoding, Tokens: v.Tokens, Budget: v.Budget, Preset: v.Preset, Diagnostics: v.Diagnostics}
	r.SetSections(v.Sections)
	return nil
}

// Builder renders the prompts of one workspace. It caches what it parsed by
// file identity, so rendering again with no file changed reads and tokenizes
// nothing again. A Builder is safe for concurrent use.
type Builder struct {
	ws *workspace.Workspace

	mu     sync.Mutex
	skills *skills.Loader
	// src is the memory source (SetMemorySource); see memsource.go.
	src MemorySource

	// What a render keeps for the next, one type per kind of thing kept,
	// each saying what it is keyed by and what invalidates it. They are
	// embedded: the package uses their fields by name.
	memoryCache
	partCache
	resultCache

	// emb runs loom.yaml's memory.embeddings (see embeddings.go).
	emb embedderSlot
}

// memoryCache is the open memory store and what was last read from it.
//
// Keys: the store by its database path (storeID); the listing (memList,
// and memFile from a source that keeps memory files) by memFP, the
// database's and its WAL's size and time with the memories' stamp and
// the user (from a MemorySource: its version and the user); the selection
// by memSelKey, memFP with every setting the selection depends on.
// Invalidated: a key that differs (a write shows in the files' size and
// time), and Invalidate or SetMemorySource, which clear the listing and
// the selection and raise memEpoch, part of every memories' stamp.
type memoryCache struct {
	store   memory.Store
	storeID string
	memFP   string
	memList []memory.Memory
	memFile *workspace.File
	// memSel is the last memory selection, for the listing and settings
	// in memSelKey.
	memSel    *memory.Selection
	memSelKey string
	memEpoch  atomic.Uint64 // counts Invalidate calls
}

// partCache keeps the parts of the prompt that unchanged inputs built and
// rendered to, so that a render after one file changed builds, renders and
// counts that file's part alone.
//
// Key: the inputs by identity. A file that changed is a new
// *workspace.File and a skill that changed a new *skills.Skill, so an
// unchanged pointer stands for unchanged content: nodes are kept by what
// each was built from (nodeCache), rendered text and counts by the
// *md.Scope (md.Cache), the skills catalogue's entry nodes by the Set
// they list (skills.EntryMemo) and their rendered text by entry
// (md.XMLMemo), Active Skills by its skills
// (skills.ActiveMemo), the bootstrap part by its files (bootMemo).
// Invalidated: an input that is another pointer; entries no render used
// are dropped after the next one.
type partCache struct {
	nodes    *nodeCache
	rendered *md.Cache
	// skillsXML keeps the assistant's skills catalogue's rendered
	// entries, so that a render after one skill changed renders that
	// entry alone (see md.XMLMemo).
	skillsXML *md.XMLMemo
	// skillsEntries keeps the catalogue's entry nodes by position, and
	// listEntries the analyst listing's.
	skillsEntries, listEntries *skills.EntryMemo
	// active keeps the Active Skills section while its skills are the same.
	active *skills.ActiveMemo
	// boot keeps the bootstrap part while its files are the same.
	boot atomic.Pointer[bootMemo]
}

// resultCache keeps whole results, newest last, at most maxRecent: a server
// renders for many users and channels (see lastFor).
//
// Key: the options (sameOptions). A result is handed out again while the
// workspace's generation, the memories' stamp and what gathering found
// besides files (inputs) are what it was made with; with a watch, which
// bumps the generation on every change, without gathering, for at most
// freshFor. Invalidated: any of those moving; Invalidate drops them all.
type resultCache struct {
	recent []*lastRender
	// refreshing is set while one Render gathers again only because the
	// last result aged past freshFor.
	refreshing atomic.Bool
}

// New returns a builder for ws.
func New(ws *workspace.Workspace) *Builder {
	return &Builder{ws: ws, partCache: partCache{nodes: newNodeCache(), rendered: md.NewCache(), skillsXML: md.NewXMLMemo(), skillsEntries: &skills.EntryMemo{}, listEntries: &skills.EntryMemo{}, active: &skills.ActiveMemo{}}}
}

// NewOneShot returns a builder for a process that renders once and exits
// (`loom render`): it keeps none of the parts a later render would reuse
// (see partCache), which a cold render would otherwise build and store for
// nothing. Its results are the same bytes and reports as New's; a second
// render builds, renders and counts everything again. On the shared
// generator's large workspace a cold render allocates ~0.6 MB less and
// touches ~4 MB less heap (~170 fewer page faults).
func NewOneShot(ws *workspace.Workspace) *Builder {
	return &Builder{ws: ws}
}

// Workspace returns the builder's workspace.
func (b *Builder) Workspace() *workspace.Workspace { return b.ws }

// Close stops the embedding worker, if one runs, and releases the memory
// store, if one was opened.
func (b *Builder) Close() error {
	b.emb.close()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.store != nil {
		err := b.store.Close()
		b.store = nil
		return err
	}
	return nil
}

// Render builds and renders the system prompt. Diagnostics in the report say
// what was refused or left out; an error means no prompt could be made. When
// the prompt is over budget even with everything droppable dropped, Render
// returns it anyway, with an *md.OverBudgetError.
//
// When nothing the prompt depends on has changed since the last call, the
// last result is returned again; results must be treated as read-only.
func (b *Builder) Render(ctx context.Context, opts Options) (*Result, error) {
	stamp := b.memStamp(ctx, opts.User) // before gathering: a change meanwhile is seen next time
	if b.ws.Watching() {
		// A watcher bumps the generation on every change, so an unchanged
		// generation means no file changed: nothing needs reading at all.
		last := b.lastFor(&opts)
		if last != nil && last.gen == b.ws.Generation() && stamp != "" && last.memStamp == stamp {
			if time.Since(last.at) < freshFor {
				return last.result, last.err
			}
			// Stale by age alone: one caller gathers again, for what no
			// watcher sees; the callers meanwhile keep the last result. If
			// every caller gathered, a server with 64 requests in flight
			// would run 64 gathers at once every freshFor and stall them all.
			if !b.refreshing.CompareAndSwap(false, true) {
				return last.result, last.err
			}
			defer b.refreshing.Store(false)
		}
	}
	if !b.ws.Watching() {
		// Every file is validated by its stat: relative to one held
		// descriptor of the root, each is a short walk.
		defer b.ws.Hold()()
	}
	writes := b.ws.Writes()
	st, err := b.gather(ctx, opts)
	if err != nil {
		return nil, err
	}
	tree := st.tree()
	inputs := st.inputsKey()
	g := b.ws.Generation() // after every read of this render
	if b.ws.Writes() != writes {
		// A write through the door during the gather (a consolidation's
		// MEMORY.md, say) may have landed after this render read the file
		// and before its answer was noted, leaving the generation where it
		// was: keep the result under a generation that never matches, so
		// the next render gathers again.
		g = racedGen
	}
	last := b.lastFor(&opts)
	if last != nil && last.inputs == inputs && last.gen == g && g != racedGen {
		b.remember(&opts, last, inputs, stamp, g, last.result, last.err)
		return last.result, last.err
	}
	res, err := st.render(tree)
	b.nodes.sweep()
	b.remember(&opts, last, inputs, stamp, g, res, err)
	return res, err
}

// racedGen is the generation a result is kept under when a write went
// through the door while it was gathered: no workspace reaches it, so the
// result is never reused.
const racedGen = ^uint64(0)

// maxRecent bounds the results a builder keeps: enough for the users and
// channels a server alternates between, few enough to search in a loop.
const maxRecent = 16

// lastFor returns the newest result for the options, or nil.
func (b *Builder) lastFor(opts *Options) *lastRender {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.recent) - 1; i >= 0; i-- {
		if sameOptions(b.recent[i].opts, opts) {
			return b.recent[i]
		}
	}
	return nil
}

// remember keeps a result for opts. last, when not nil, is a result kept
// for the same options, whose frozen copy of them is taken again.
func (b *Builder) remember(opts *Options, last *lastRender, in inputs, memStamp string, gen uint64, res *Result, err error) {
	var o *Options
	if last != nil {
		o = last.opts
	} else {
		o = frozen(*opts)
	}
	r := &lastRender{opts: o, inputs: in, memStamp: memStamp, gen: gen, at: time.Now(), result: res, err: err}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recent = slices.DeleteFunc(b.recent, func(l *lastRender) bool { return sameOptions(l.opts, opts) })
	if len(b.recent) == maxRecent {
		b.recent = slices.Delete(b.recent, 0, 1) // the oldest
	}
	b.recent = append(b.recent, r)
}

// render renders the tree and assembles the report.
func (st *state) render(tree md.Node) (*Result, error) {
	r := md.NewRenderer(st.rendererOptions()...)
	res, rerr := r.Render(tree)
	var over *md.OverBudgetError
	if rerr != nil && !errors.As(rerr, &over) {
		return nil, rerr
	}
	rep := Report{
		Encoding:    st.encoding,
		Tokens:      res.Report.Tokens,
		Budget:      res.Report.Budget,
		Preset:      st.preset,
		Diagnostics: st.diags,
		lines:       res.Report,
	}
	if rep.Diagnostics == nil {
		rep.Diagnostics = workspace.Diagnostics{}
	}
	// Workspace files lose their control characters at the door, and text
	// from elsewhere (memories a model extracted, the caller's options)
	// where it enters the tree (see cleanOptions and buildMemories), so the
	// prompt holds none and is not scanned again.
	return &Result{Prompt: res.Text, Report: rep, recall: st.recall}, rerr
}

// Render is a one-shot [Builder.Render] for the workspace at dir.
func Render(ctx context.Context, dir string, opts Options) (*Result, error) {
	ws, err := workspace.Open(dir)
	if err != nil {
		return nil, err
	}
	b := New(ws)
	defer b.Close()
	return b.Render(ctx, opts)
}

// counterFor picks the token counter: the encoding by name, else by model,
// else o200k_base. A model loom does not know falls back to o200k_base with a
// diagnostic.
func counterFor(encoding, model string, diags *workspace.Diagnostics) (tokens.Counter, string, error) {
	if encoding != "" {
		c, err := tokens.Get(encoding)
		if err != nil {
			return nil, "", err
		}
		return c, encoding, nil
	}
	if model != "" {
		c, res := tokens.ForModel(model)
		if res.Fallback {
			diags.Add(workspace.Warning, "", 0, "tokens.model-fallback", "model %q is not known; counting with %s", model, res.Encoding)
		}
		return c, res.Encoding, nil
	}
	c, err := tokens.Get(tokens.Default)
	return c, tokens.Default, err
}

// cleanOptions strips control characters from the options that are put
// into the prompt as text.
func cleanOptions(o Options) Options {
	clean := func(s *string) {
		if workspace.HasControls(*s) {
			*s = workspace.StripControls(*s)
		}
	}
	clean(&o.Channel)
	clean(&o.ChatURL)
	clean(&o.GOOS)
	clean(&o.GOARCH)
	if o.Fork != nil {
		f := *o.Fork
		clean(&f.Title)
		clean(&f.Author)
		clean(&f.Selection)
		o.Fork = &f
	}
	if o.Tools != nil {
		tools := make([]string, len(o.Tools))
		for i, t := range o.Tools {
			clean(&t)
			tools[i] = t
		}
		o.Tools = tools
	}
	return o
}

func runtimeOf(opts Options) (goos, goarch string) {
	goos, goarch = opts.GOOS, opts.GOARCH
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	return goos, goarch
}

func hasTool(tools []string, name string) bool {
	return tools == nil || slices.Contains(tools, name)
}
