package prompt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt/dialects"
	"github.com/loomctx/loom/prompt/naoproject"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// Priorities decide what a budget drops first, lowest first. Each kind of
// scope owns a range of its own, wide enough that no count of entries can
// reach the next one, so the order below holds for any workspace:
//
//	range                      scope                        within the range
//	1,000,000 – 1,999,999      skills summary entries       + position from the end
//	2,000,000 – 2,999,999      structured memories          + rank (best = highest)
//	3,000,000                  memory/MEMORY.md             cut rather than dropped
//	4,000,000                  active (always-on) skills
//
// Everything else is never dropped.
const (
	prioSkills      = 1_000_000 // + position from the end
	prioMemoryItems = 2_000_000 // + rank
	prioMemoryFile  = 3_000_000
	prioActive      = 4_000_000
	prioRange       = 999_999 // entries a range holds
)

// state is everything one render needs, gathered from the workspace.
type state struct {
	nodes     *nodeCache
	rendered  *md.Cache
	skillsXML *md.XMLMemo
	entries   *skills.EntryMemo
	lists     *skills.EntryMemo // entries, for the analyst's listing
	active    *skills.ActiveMemo
	boot      *atomic.Pointer[bootMemo]
	ws        *workspace.Workspace
	cfg       *config.Config
	opts      Options
	preset    string
	encoding  string
	counter   tokens.Counter
	budget    int
	now       time.Time
	loc       *time.Location
	diags     workspace.Diagnostics

	skills      *skills.Set
	memoryText  *workspace.File
	memories    *memory.Selection
	connections []Connection
	dialects    []dialects.Dialect

	// nao is what a nao project's nao_config.yaml declares (analyst only).
	nao naoproject.Config
	// defaultTools says the tool list was not given, so the analyst
	// assumed nao's default set (see naoDefaultTools).
	defaultTools bool
	mcpOnce      bool
	mcpServers   []mcpServer

	extraEntries []md.Entry
	memoryKey    string // the memory store's state, for reuse
	memErr       error  // the memory source could not be reached

	// For a recall (recall.go): the scope's active memories, the
	// database they came from ("" for a memory source), the whole memory
	// budget, and what the render leaves to Builder.Recall.
	memList   []memory.Memory
	memDB     string
	memBudget int
	recall    *recallPlan
}

func (b *Builder) gather(ctx context.Context, opts Options) (*state, error) {
	ws := b.ws
	cfg, err := config.Load(ws)
	if err != nil {
		return nil, err
	}
	opts = cleanOptions(opts)
	st := &state{ws: ws, cfg: cfg, opts: opts, nodes: b.nodes, rendered: b.rendered, skillsXML: b.skillsXML, entries: b.skillsEntries, lists: b.listEntries, active: b.active, boot: &b.boot}
	st.preset = cfg.Preset
	if opts.Preset != "" {
		st.preset = opts.Preset
	}
	if st.preset != Assistant && st.preset != Analyst {
		return nil, fmt.Errorf("unknown preset %q (use %s or %s)", st.preset, Assistant, Analyst)
	}
	enc, model := cfg.Encoding, cfg.Model
	if opts.Encoding != "" || opts.Model != "" {
		enc, model = opts.Encoding, opts.Model
	}
	st.counter, st.encoding, err = counterFor(enc, model, &st.diags)
	if err != nil {
		return nil, err
	}
	st.budget = cfg.Budget.Total
	if opts.Budget != 0 {
		st.budget = opts.Budget
	}
	if opts.Budget < 0 {
		return nil, fmt.Errorf("budget must be a positive number of tokens (got %d)", opts.Budget)
	}
	st.checkNotEmpty()
	if opts.Tools == nil && cfg.Tools != nil {
		st.opts.Tools = cfg.Tools
	}
	if st.preset == Analyst && !opts.Subagent {
		st.nao = naoproject.LoadConfig(ws, &st.diags)
		if st.opts.Tools == nil {
			st.opts.Tools, st.defaultTools = st.naoDefaultTools(), true
			st.diags.Add(workspace.Warning, cfg.File, 0, "prompt.default-tools",
				"no tool list given, so the prompt has the rules of nao's default tools (%s); name the agent's own with loom.yaml tools: or --tools ([] for none)",
				strings.Join(st.opts.Tools, ", "))
		}
	}

	st.now = opts.Now
	if st.now.IsZero() && st.preset == Analyst && !opts.Subagent {
		st.now = time.Now()
	}
	zone := cfg.Timezone
	if opts.Timezone != "" {
		zone = opts.Timezone
	}
	st.loc = time.UTC
	if zone != "" {
		if loc, err := time.LoadLocation(zone); err == nil {
			st.loc = loc
		} else {
			if opts.Timezone != "" {
				// The zone came from the caller (loom render --tz, a request),
				// not from loom.yaml: say so, and do not point at the file.
				st.diags.Add(workspace.Warning, "", 0, "prompt.timezone", "unknown time zone %q given for this render (--tz); using UTC", zone)
			} else {
				st.diags.Add(workspace.Warning, cfg.File, cfg.Line("timezone"), "config.timezone", "unknown time zone %q; using UTC", zone)
			}
		}
	}

	if !st.disabled("skills") || !st.disabled("active_skills") {
		st.skills = b.loadSkills(cfg)
		// The set's diagnostics already hold every skill's own, once.
		st.diags = append(st.diags, st.skills.Diagnostics...)
	}
	if !opts.Subagent && !st.disabled("memory") {
		if f, ok := ws.Read("memory/MEMORY.md", &st.diags); ok && strings.TrimSpace(f.Text) != "" {
			var origin string
			if st.fileTemplate("memory/MEMORY.md", f, &origin) {
				st.diags.Add(workspace.Warning, f.Path, 0, "prompt.untouched-template", "left out: still %s", origin)
			} else {
				st.memoryText = f
			}
		}
		st.memories = b.selectMemories(ctx, st)
		if st.memErr != nil {
			return nil, st.memErr
		}
		st.planRecall()
	}
	if st.preset == Analyst && !opts.Subagent {
		st.connections = Connections(ws, &st.diags)
		set, err := dialects.Load(ws, &st.diags)
		if err != nil {
			return nil, err
		}
		types := make([]string, len(st.connections))
		for i, c := range st.connections {
			types[i] = c.Type
		}
		st.dialects = set.For(types)
	}
	return st, nil
}

// Skills returns the workspace's skills as the prompt sees them, from the
// builder's cache, for a caller that also expands /name references.
func (b *Builder) Skills() (*skills.Set, error) {
	cfg, err := config.Load(b.ws)
	if err != nil {
		return nil, err
	}
	return b.loadSkills(cfg), nil
}

func (b *Builder) loadSkills(cfg *config.Config) *skills.Set {
	b.mu.Lock()
	defer b.mu.Unlock()
	opts, _ := skills.FromConfig(cfg)
	if b.skills == nil || !slices.Equal(b.skills.Options().Paths, opts.Paths) || b.skills.Options().AbsolutePaths != opts.AbsolutePaths {
		b.skills = skills.New(b.ws, opts)
	}
	return b.skills.Load()
}

// selectMemories lists the memories of the render's user, from the
// builder's memory source when it has one, else from the workspace's
// memory database if there is one, and picks them within the memory
// budget. A broken database costs the memories, not the render; a source
// that cannot be reached (memory.ErrUnavailable) fails the render, which
// a server answers with 503.
func (b *Builder) selectMemories(ctx context.Context, st *state) *memory.Selection {
	root := st.ws.Root()
	var (
		list []memory.Memory
		fp   string
	)
	if src := b.memorySource(); src != nil {
		var err error
		list, fp, err = b.listFromSource(ctx, st, src)
		if err != nil {
			if errors.Is(err, memory.ErrUnavailable) {
				st.memErr = err
			}
			st.diags.Add(workspace.Error, "", 0, "memory.store", "memories left out: %s", err)
			return nil
		}
	} else {
		if root == "" {
			return nil
		}
		dbPath, ids, err := config.MemoryStoreFiles(st.ws, st.cfg)
		if err != nil {
			st.diags.Add(workspace.Error, config.FileName, st.cfg.Line("memory.db"), "memory.db", "memories left out: %s", err)
			return nil
		}
		var dbID, walID workspace.FileID
		if ids != nil {
			if ids[0] == (workspace.FileID{}) {
				return nil // no database yet
			}
			dbID, walID = ids[0], ids[1]
		} else {
			// The operator's database, outside the workspace's door.
			var err error
			if dbID, err = statID(dbPath); errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			walID, _ = statID(dbPath + "-wal")
		}
		fail := func(err error) *memory.Selection {
			var dbErr *memory.DBError
			if errors.As(err, &dbErr) {
				st.diags = append(st.diags, dbErr.Diagnostic(root))
			} else {
				st.diags.Add(workspace.Error, relTo(root, dbPath), 0, "memory.db", "memories left out: %s", err)
			}
			return nil
		}
		store, err := b.openStore(dbPath)
		if err != nil {
			return fail(err)
		}
		st.memDB = dbPath
		// The store's files tell whether anything was written since the
		// last listing (a commit grows the WAL or rewrites the database),
		// so an unchanged store is not queried again; Invalidate says so
		// for a write the files may not show yet.
		// (The database's identity is the one taken above, before the
		// store was opened: a write after it makes the next render list
		// again.)
		fp = fingerprint(dbID) + fingerprint(walID) + "\x00" + b.memStamp(ctx, st.opts.User) + "\x00" + st.opts.User
		b.mu.Lock()
		cached, known := b.memList, b.memFP == fp
		b.mu.Unlock()
		list = cached
		if !known {
			list, err = store.List(ctx, memory.Query{User: st.opts.User})
			if err != nil {
				return fail(err)
			}
			b.mu.Lock()
			b.memList, b.memFP = list, fp
			b.mu.Unlock()
		}
	}
	st.memoryKey = fp + "\x00" + st.opts.ChatID + strconv.Itoa(st.opts.MemoryBudget)
	cats := memory.CategoriesOf(st.cfg)
	budget := st.cfg.Memory.Budget
	if st.opts.MemoryBudget > 0 {
		budget = st.opts.MemoryBudget
	}
	if budget <= 0 {
		budget = config.DefaultMemoryBudget
	}
	st.memList, st.memBudget = list, budget
	if st.cfg.Memory.Relevant() {
		// The system prompt keeps its share by priority; the rest is
		// filled per turn beside the message (recall.go).
		budget -= RecallShare(budget)
	}
	var sel memory.SelectOptions
	if st.opts.ChatID != "" && st.cfg.Memory.ExcludesCurrentChat() {
		sel.ExcludeChat = st.opts.ChatID
	}
	// The selection depends only on the listing and these settings, so an
	// unchanged store gives the same selection: it is kept, not made again.
	selKey := fp + "\x00" + sel.ExcludeChat + "\x00" + strconv.Itoa(budget) + "\x00" + tokens.NameOf(st.counter)
	for _, c := range cats {
		selKey += "\x00" + c.Name + "=" + c.Label
	}
	b.mu.Lock()
	cached, hit := b.memSel, b.memSelKey == selKey
	b.mu.Unlock()
	if hit {
		return cached
	}
	s := memory.Select(list, cats, budget, st.counter, sel)
	b.mu.Lock()
	b.memSel, b.memSelKey = &s, selKey
	b.mu.Unlock()
	return &s
}

func (b *Builder) openStore(dbPath string) (memory.Store, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.store != nil && b.storeID == dbPath {
		return b.store, nil
	}
	if b.store != nil {
		b.store.Close()
		b.store = nil
	}
	s, err := memory.OpenSQLite(dbPath)
	if err != nil {
		return nil, err
	}
	b.store, b.storeID = s, dbPath
	return s, nil
}

func relTo(root, p string) string {
	if strings.HasPrefix(p, root+"/") {
		return strings.TrimPrefix(p, root+"/")
	}
	return path.Base(p)
}

func (st *state) disabled(section string) bool {
	return slices.Contains(st.cfg.Disable, section)
}

func (st *state) rendererOptions() []md.Option {
	opts := []md.Option{md.WithCounter(st.counter), md.WithTail(st.extraEntries)}
	if st.opts.NoCounts {
		opts = append(opts, md.WithoutCounts())
	}
	if st.budget > 0 {
		opts = append(opts, md.WithBudget(st.budget))
	}
	if st.rendered != nil {
		opts = append(opts, md.WithCache(st.rendered))
	}
	return opts
}

// sectionCap is the per-section budget from loom.yaml, or 0.
func (st *state) sectionCap(name string) int {
	return st.cfg.Budget.Sections[name]
}

// section wraps a top-level part of the default prompt in a named scope,
// applies its own budget from loom.yaml and leaves it out when disabled.
func (st *state) section(name string, children ...md.Node) *md.Scope {
	if st.disabled(name) || !slices.ContainsFunc(children, func(n md.Node) bool { return !isNil(n) }) {
		return nil
	}
	s := md.Named(name, children...)
	if c := st.sectionCap(name); c > 0 {
		s = s.Truncate(c)
	}
	return s
}

// isNil reports whether n is nothing: nil, or a nil pointer in an interface.
func isNil(n md.Node) bool {
	switch n := n.(type) {
	case nil:
		return true
	case *md.Scope:
		return n == nil
	case *md.Section:
		return n == nil
	case *md.Block:
		return n == nil
	}
	return false
}

// statID is the size and modification time of the file at path, the zero
// FileID when it cannot be stat'ed.
func statID(path string) (workspace.FileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return workspace.FileID{}, err
	}
	return workspace.FileID{Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// fingerprint is a file's size and modification time, or "-" for the zero
// FileID (no such file).
func fingerprint(id workspace.FileID) string {
	if id == (workspace.FileID{}) {
		return "-"
	}
	return strconv.FormatInt(id.Size, 10) + "@" + strconv.FormatInt(id.ModTime.UnixNano(), 10) + ";"
}
