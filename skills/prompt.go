package skills

import (
	"bytes"
	"embed"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/loomctx/loom/internal/template"
	"github.com/loomctx/loom/md"
)

//go:embed text
var textFS embed.FS

var (
	assistantIntro = mustRead("text/assistant.md")
	analystIntro   = mustRead("text/analyst.md")
	moreTmpl       = sync.OnceValue(func() *template.Template { return template.Must(template.ParseFS(textFS, "text/more.tmpl")) })
	cutTmpl        = sync.OnceValue(func() *template.Template { return template.Must(template.ParseFS(textFS, "text/cut.tmpl")) })
)

func mustRead(name string) string {
	b, err := textFS.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}

func execute(t *template.Template, data any) string {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		panic(err) // the templates are loom's own and fixed at build time
	}
	return strings.TrimSpace(b.String())
}

// PromptOptions place skills in a prompt.
type PromptOptions struct {
	// Level is the heading level of the section; 0 means the preset's own
	// (1 for the assistant summary and Active Skills, 2 for the analyst
	// listing).
	Level int
	// Priority is the budget priority of the first summary entry. Each
	// later entry is one lower, so under a budget entries drop from the end
	// of the list first. Available skills are listed before unavailable
	// ones, so those go first.
	Priority int
	// Reuse, when set, returns the node cached under key or caches what
	// build returns: a caller that keeps nodes between renders gets the
	// same entry node back for a skill whose entry did not change, and its
	// renderer can reuse that entry's rendered text.
	Reuse func(key any, build func() any) any
	// XMLMemo, when set, keeps the summary's rendered entries between
	// renders (see [md.XMLMemo]): a caller that renders the summary again
	// after one skill changed gives the same memo each time.
	XMLMemo *md.XMLMemo
	// Entries, when set, keeps the summary's (or the listing's) entry
	// nodes by position between calls: an entry whose skill and priority
	// are what they were is the node it was, found without a Reuse lookup.
	// A summary and a listing each need a memo of their own.
	Entries *EntryMemo
	// Unbudgeted says the summary is rendered without a token budget, so
	// nothing in it is dropped: its list then needs no scope of its own
	// for the notice of what was dropped, and is not wrapped in one (the
	// text is the same; a render after one entry changed copies one level
	// of scopes fewer).
	Unbudgeted bool
	// ActiveMemo, when set, makes Active return the node it returned last
	// while the always-on skills are the same ones.
	ActiveMemo *ActiveMemo
	// SkipBuiltin leaves the built-in skills out of a Listing, for a
	// prompt that lists them in a section of their own (the analyst's
	// Built-in Skills, with load_skill); Entries is then not used.
	SkipBuiltin bool
}

// ActiveMemo keeps the last Active section (see PromptOptions.ActiveMemo).
// It is safe for concurrent use.
type ActiveMemo struct {
	mu    sync.Mutex
	level int
	set   uint64 // the ID of the Set whose always-on skills are list
	list  []*Skill
	node  md.Node
}

// EntryMemo keeps the entry nodes of the last summary made with it (see
// PromptOptions.Entries). It is safe for concurrent use.
type EntryMemo struct {
	mu   sync.Mutex
	prio int
	// list is the skills of the last summary, in order; it is the memo's
	// own, and a summary overwrites it in place under mu.
	list  []*Skill
	nodes []md.Node // the last summary's entries, never changed once made
	set   uint64    // the ID of the Set they list
	shape int       // which section and level they are entries of
}

// entryKey is everything one listing entry is built from. A *Skill in a
// Set is never changed, and a Loader hands out the same one while nothing
// about the skill changed, so the pointer stands for its content.
type entryKey struct {
	sk      *Skill
	prio    int
	level   int32
	listing bool
}

// entry returns the entry node for sk, through opts.Reuse when set.
func (opts PromptOptions) entry(kind string, sk *Skill, prio, level int, build func() *md.Scope) *md.Scope {
	if opts.Reuse == nil {
		return build()
	}
	return opts.Reuse(entryKey{sk: sk, prio: prio, level: int32(level), listing: kind == "listing"}, func() any { return build() }).(*md.Scope)
}

func level(opts PromptOptions, def int) int {
	if opts.Level > 0 {
		return opts.Level
	}
	return def
}

// listed returns the skills a summary lists: usable, not always-on-and-
// available (those are in Active Skills already), available first, then by
// name.
func (s *Set) listed() []*Skill {
	out := make([]*Skill, 0, s.countListed())
	s.eachListed(func(_ int, sk *Skill) { out = append(out, sk) })
	return out
}

// isListed reports whether a summary lists sk.
func isListed(sk *Skill) bool { return sk.usable() && !(sk.Always() && sk.Available) }

// countListed is len(s.listed()).
func (s *Set) countListed() int {
	n := 0
	for _, sk := range s.Skills {
		if isListed(sk) {
			n++
		}
	}
	return n
}

// eachListed calls fn with each skill of s.listed() and its index there,
// in order.
func (s *Set) eachListed(fn func(i int, sk *Skill)) {
	// Two passes in the Set's order (by name) give the stable partition:
	// available ones, then the others.
	i := 0
	for _, avail := range [2]bool{true, false} {
		for _, sk := range s.Skills {
			if isListed(sk) && sk.Available == avail {
				fn(i, sk)
				i++
			}
		}
	}
}

// Summary is the assistant preset's skills section: a short introduction
// and an XML catalogue,
//
//	<skills>
//	  <skill available="true">
//	    <name>…</name>
//	    <description>…</description>
//	    <location>…</location>
//	  </skill>
//	</skills>
//
// with a <requires> element ("CLI: x, ENV: Y") on unavailable skills. All
// text is escaped. Each entry is a scope named "skill:<name>"; when the
// budget drops some, a notice after the list says how many and where they
// are. Summary returns nil when there is nothing to list.
func (s *Set) Summary(opts PromptOptions) md.Node {
	var entries []md.Node
	if m := opts.Entries; m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		entries = s.patchEntries(m, opts, 0, func(at int, sk *Skill) md.Node { return summaryEntry(sk, opts.Priority-at) })
		if entries == nil {
			entries = s.fillEntries(m, opts, 0, func(i int, sk *Skill) md.Node { return opts.summaryEntry(i, sk) })
		}
		m.set = s.id
	} else {
		entries = make([]md.Node, s.countListed())
		s.eachListed(func(i int, sk *Skill) { entries[i] = opts.summaryEntry(i, sk) })
	}
	if len(entries) == 0 {
		return nil
	}
	catalogue := md.XML("skills", nil, entries...)
	if opts.XMLMemo != nil {
		catalogue = catalogue.Memo(opts.XMLMemo)
	}
	if opts.Unbudgeted {
		return md.Sec(level(opts, 1), "Skills", md.Group{md.Raw(assistantIntro), catalogue})
	}
	body := md.Named("skills", md.Raw(assistantIntro), catalogue).OnDrop(moreNotice(s))
	return md.Sec(level(opts, 1), "Skills", body)
}

// summaryEntry is the entry of sk at index i of the summary.
func (opts PromptOptions) summaryEntry(i int, sk *Skill) *md.Scope {
	prio := opts.Priority - i
	return opts.entry("summary", sk, prio, 0, func() *md.Scope { return summaryEntry(sk, prio) })
}

// fillEntries returns the entries of a summary or listing (shape tells
// them apart), under m's lock: the entry of a skill that is where it was in
// m's last one is the node it was, and entry makes the others.
func (s *Set) fillEntries(m *EntryMemo, opts PromptOptions, shape int, entry func(i int, sk *Skill) md.Node) []md.Node {
	n := s.countListed()
	entries := make([]md.Node, n)
	last, nodes := 0, m.nodes
	if m.prio == opts.Priority && m.shape == shape {
		last = min(len(m.list), len(nodes))
	}
	m.nodes = nil // until this summary is whole
	if cap(m.list) < n {
		m.list = slices.Grow(m.list, n-len(m.list))
	}
	m.list = m.list[:n]
	s.eachListed(func(i int, sk *Skill) {
		if i < last && m.list[i] == sk {
			entries[i] = nodes[i]
			return
		}
		m.list[i] = sk
		entries[i] = entry(i, sk)
	})
	m.prio, m.shape, m.nodes = opts.Priority, shape, entries
	return entries
}

// patchEntries returns the entries of a summary or listing made from m's
// last ones, or nil when it cannot. When m's entries are of the Set s was
// patched from, with the same shape and priorities, and every skill
// patchSet replaced is listed now as it was then (or neither), each entry
// is where it was, and only those skills' entries are made again, by
// fresh. It updates m in place; the caller holds m's lock.
func (s *Set) patchEntries(m *EntryMemo, opts PromptOptions, shape int, fresh func(at int, sk *Skill) md.Node) []md.Node {
	if s.from == 0 || m.set != s.from || m.prio != opts.Priority || m.shape != shape || len(m.nodes) != len(m.list) || len(m.nodes) == 0 {
		return nil
	}
	for i, k := range s.changed {
		old, sk := s.replaced[i], s.Skills[k]
		if isListed(old) != isListed(sk) || (isListed(sk) && (old.Available != sk.Available || !slices.Contains(m.list, old))) {
			return nil
		}
	}
	entries := slices.Clone(m.nodes)
	for i, k := range s.changed {
		if sk := s.Skills[k]; isListed(sk) {
			// A skill patchSet put in is a new one: no node was made for
			// it before, so none is looked for (opts.Reuse).
			at := slices.Index(m.list, s.replaced[i])
			entries[at] = fresh(at, sk)
			m.list[at] = sk
		}
	}
	m.nodes = entries
	return entries
}

// summaryParts holds every node of one summary entry, so that an entry is
// made with one allocation (besides its texts) instead of one per node.
type summaryParts struct {
	scope     md.Scope
	scopeKids [1]md.Node
	sources   [1]string
	skill     md.XMLElement
	attrs     [1]md.Attr
	kids      [4]md.Node
	leaves    [4]md.XMLElement
	leafKids  [4][1]md.Node
}

// summaryEntry is the scope "skill:<name>" around
//
//	<skill available="…"><name/><description/><location/> or <content/>[<requires/>]</skill>
//
// with priority prio and sk's path as its source: what
//
//	entryScope(sk, prio, md.XML("skill", attrs, md.XML("name", nil, md.Text(sk.Name)), …))
//
// makes, in one block.
func summaryEntry(sk *Skill, prio int) *md.Scope {
	p := &summaryParts{}
	kids := p.kids[:0]
	leaf := func(tag, text string) {
		i := len(kids)
		p.leafKids[i][0] = md.Text(text)
		p.leaves[i] = md.XMLElement{Tag: tag, Children: p.leafKids[i][:]}
		kids = append(kids, &p.leaves[i])
	}
	leaf("name", sk.Name)
	leaf("description", describe(sk))
	if sk.Inline {
		leaf("content", sk.Body)
	} else {
		leaf("location", sk.Location)
	}
	if !sk.Available {
		leaf("requires", sk.MissingText())
	}
	avail := "false"
	if sk.Available {
		avail = "true"
	}
	p.attrs[0] = md.Attr{Name: "available", Value: avail}
	p.skill = md.XMLElement{Tag: "skill", Attrs: p.attrs[:], Children: kids}
	p.scopeKids[0] = &p.skill
	p.sources[0] = sk.Path
	p.scope = md.Scope{Name: "skill:" + sk.Name, Children: p.scopeKids[:], Sources: p.sources[:]}
	return p.scope.Prio(prio)
}

// Listing is the analyst preset's skills section: a short introduction,
// then for each skill a "### Skill: <name>" heading with its description and
// location (and what it needs, when unavailable). Entries drop from the end
// under a budget, with a notice, as in [Set.Summary].
func (s *Set) Listing(opts PromptOptions) md.Node {
	lv := level(opts, 2)
	entry := func(i int, sk *Skill) md.Node {
		prio := opts.Priority - i
		return opts.entry("listing", sk, prio, lv, func() *md.Scope { return listingEntry(sk, prio, lv) })
	}
	var entries []md.Node
	if opts.SkipBuiltin {
		s.eachListed(func(_ int, sk *Skill) {
			if sk.Source != SourceBuiltin {
				entries = append(entries, entry(len(entries), sk))
			}
		})
	} else if m := opts.Entries; m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		shape := 1 + lv // a summary's is 0
		entries = s.patchEntries(m, opts, shape, func(at int, sk *Skill) md.Node { return listingEntry(sk, opts.Priority-at, lv) })
		if entries == nil {
			entries = s.fillEntries(m, opts, shape, entry)
		}
		m.set = s.id
	} else {
		entries = make([]md.Node, s.countListed())
		s.eachListed(func(i int, sk *Skill) { entries[i] = entry(i, sk) })
	}
	if len(entries) == 0 {
		return nil
	}
	body := md.Named("skills", md.Raw(analystIntro), md.Group(entries)).OnDrop(moreNotice(s))
	return md.Sec(lv, "Skills", body)
}

func listingEntry(sk *Skill, prio, lv int) *md.Scope {
	return entryScope(sk, prio, md.Group{
		md.Title(min(lv+1, 6), md.Raw("Skill: "), md.Text(sk.Name)),
		md.P(md.Bold(md.Raw("Description:")), md.Raw(" "), md.Text(describe(sk))),
		md.If(!sk.Inline, md.P(md.Bold(md.Raw("Location:")), md.Raw(" "), md.Code(sk.Location))),
		md.If(sk.Inline, md.Text(sk.Body)),
		md.If(!sk.Available, md.P(md.Bold(md.Raw("Needs:")), md.Raw(" "), md.Text(sk.MissingText()))),
	})
}

// Active is the "Active Skills" section: the body, frontmatter stripped, of
// every available always-on skill under "### Skill: <name>", separated by
// rules. Unavailable always-on skills are left out (they are listed in the
// summary instead, with what they need). Active returns nil when there are
// none. The section is a scope named "active-skills" with no priority: it
// is never dropped.
func (s *Set) Active(opts PromptOptions) md.Node {
	lv := level(opts, 1)
	if m := opts.ActiveMemo; m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.list != nil && m.level == lv && (m.set == s.id || s.activeAsFrom(m.set) || s.sameActive(m.list)) {
			m.set = s.id
			return m.node
		}
	}
	var active []*Skill
	for _, sk := range s.Skills {
		if isActive(sk) {
			active = append(active, sk)
		}
	}
	if m := opts.ActiveMemo; m != nil {
		m.list, m.level, m.set = active, lv, s.id
		if m.list == nil {
			m.list = []*Skill{}
		}
		m.node = activeNode(active, lv)
		return m.node
	}
	return activeNode(active, lv)
}

// isActive reports whether sk is in the Active Skills section.
func isActive(sk *Skill) bool { return sk.usable() && sk.Always() && sk.Available && sk.Body != "" }

// activeAsFrom reports whether s was patched from the Set numbered set
// and none of the skills it replaced was or is active: its active skills
// are that Set's.
func (s *Set) activeAsFrom(set uint64) bool {
	if s.from == 0 || s.from != set {
		return false
	}
	for i, k := range s.changed {
		if isActive(s.replaced[i]) || isActive(s.Skills[k]) {
			return false
		}
	}
	return true
}

// sameActive reports whether list is the skills of s that are active.
func (s *Set) sameActive(list []*Skill) bool {
	i := 0
	for _, sk := range s.Skills {
		if isActive(sk) {
			if i == len(list) || list[i] != sk {
				return false
			}
			i++
		}
	}
	return i == len(list)
}

func activeNode(active []*Skill, lv int) md.Node {
	var parts []md.Node
	for _, sk := range active {
		if len(parts) > 0 {
			parts = append(parts, md.Hr())
		}
		parts = append(parts, md.Named("active-skill:"+sk.Name,
			md.Title(3, md.Raw("Skill: "), md.Text(sk.Name)),
			md.Text(sk.Body),
		).From(sk.Path))
	}
	if len(parts) == 0 {
		return nil
	}
	return md.Sec(lv, "Active Skills", md.Named("active-skills", parts...))
}

// describe is the skill's description as listed: a skill without one is
// described by its name, as nanobot does, rather than by an empty element.
func describe(sk *Skill) string {
	if d := strings.TrimSpace(sk.Description()); d != "" {
		return d
	}
	return sk.Name
}

func entryScope(sk *Skill, prio int, n md.Node) *md.Scope {
	return md.Named("skill:"+sk.Name, n).Prio(prio).From(sk.Path)
}

// moreNotice says how many entries of s's summary or listing the budget
// dropped and which folders hold them.
// The folders are worked out when a notice is first needed.
func moreNotice(s *Set) func(int) md.Node {
	where := sync.OnceValue(func() string {
		var dirs []string
		seen := map[string]bool{}
		for _, sk := range s.listed() {
			d := topFolder(sk)
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
		sort.Strings(dirs)
		return joinAnd(dirs)
	})
	return func(n int) md.Node {
		return md.Raw(execute(moreTmpl(), struct {
			N     int
			Where string
		}{n, where()}))
	}
}

// topFolder is the folder a skill's location sits in, above the skill's own
// folder: "skills/", "agent/skills/", "builtin/" or an extra folder.
func topFolder(sk *Skill) string {
	loc := strings.TrimSuffix(sk.Location, "/"+FileName)
	loc = strings.TrimSuffix(loc, ".md")
	if i := strings.LastIndexAny(loc, `/\`); i >= 0 {
		return loc[:i+1]
	}
	return loc
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
