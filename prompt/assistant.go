package prompt

import (
	"slices"
	"strings"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/starter"
	"github.com/loomctx/loom/workspace"
)

// BootstrapFiles are the assistant's workspace files, in prompt order.
var BootstrapFiles = []string{"AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md"}

// partSep separates the assistant's parts and the analyst's tail.
const partSep = "\n\n---\n\n"

// assistantSections are the parts of the assistant prompt, nanobot's
// structure: identity, bootstrap files, memory, always-on skills, skills
// summary. Nothing in it depends on the clock.
func (st *state) assistantSections() []md.Node {
	return []md.Node{
		st.identitySection(),
		st.bootstrap(),
		st.section("tool_rules", st.toolSections(1)),
		st.memorySection(),
		st.activeSkills(),
		st.skillsSummary(),
	}
}

// identitySection is the identity part, kept as the same node while what
// it is made from is the same, so that a re-render copies its text.
func (st *state) identitySection() md.Node {
	goos, goarch := runtimeOf(st.opts)
	type key struct {
		name, desc, emoji, posix, windows, goos, goarch string
		cap                                             int
		off                                             bool
	}
	k := key{st.cfg.Name, st.cfg.Description, st.cfg.Emoji, st.cfg.Runtime.Policy.POSIX, st.cfg.Runtime.Policy.Windows,
		goos, goarch, st.sectionCap("identity"), st.disabled("identity")}
	return st.memo(k, func() md.Node { return st.section("identity", st.identity()) })
}

func (st *state) identity() md.Node {
	name := st.cfg.Name
	if name == "" {
		name = "loom"
	}
	desc := strings.TrimSpace(st.cfg.Description)
	if desc == "" {
		desc = "a helpful personal assistant"
	}
	if !strings.HasSuffix(desc, ".") && !strings.HasSuffix(desc, "!") && !strings.HasSuffix(desc, "?") {
		desc += "."
	}
	goos, goarch := runtimeOf(st.opts)
	policy := wording("policy-posix", nil)
	custom := st.cfg.Runtime.Policy.POSIX
	if goos == "windows" {
		policy, custom = wording("policy-windows", nil), st.cfg.Runtime.Policy.Windows
	}
	if custom != "" {
		policy = md.Text(strings.TrimSpace(custom))
	}
	heading := md.Text(name)
	if st.cfg.Emoji != "" {
		heading = md.Text(name + " " + st.cfg.Emoji)
	}
	return md.Doc(
		md.Title(1, heading),
		wording("identity", map[string]any{
			"Name":        name,
			"Description": desc,
			"Runtime":     osName(goos) + " " + goarch,
		}),
		policy,
		wording("guidelines", nil),
	)
}

func osName(goos string) string {
	switch goos {
	case "darwin":
		return "macOS"
	case "linux":
		return "Linux"
	case "windows":
		return "Windows"
	}
	return goos
}

// bootSections are BootstrapFiles as loom has them, each with the name of
// its section.
var bootSections = func() [][2]string {
	names := make([][2]string, len(BootstrapFiles))
	for i, name := range BootstrapFiles {
		names[i] = [2]string{name, strings.ToLower(strings.TrimSuffix(name, ".md"))}
	}
	return names
}()

// bootSection is the section name of BootstrapFiles[i], name.
func bootSection(i int, name string) string {
	if i < len(bootSections) && bootSections[i][0] == name {
		return bootSections[i][1]
	}
	return strings.ToLower(strings.TrimSuffix(name, ".md"))
}

// bootMemo is the last bootstrap part and what it was made from.
type bootMemo struct {
	files []bootFile // one for each of BootstrapFiles
	node  md.Node
}

// bootFile is what a bootstrap file gave a render: the file read (nil when
// none, or disabled), its section's settings, the diagnostic that left it
// out, if any, or else its node.
type bootFile struct {
	f     *workspace.File
	off   bool
	cap   int
	notes workspace.Diagnostics
	node  *md.Scope
}

// maxBoot is how many bootstrap files a render keeps track of without
// allocating.
const maxBoot = 8

// bootstrap is each bootstrap file as "## FILE", joined by blank lines.
// Empty files and untouched starter templates are left out, with a
// diagnostic. A file whose *File (the door hands out the same one while
// the file is unchanged) and section settings are what the last render
// had gives what it gave then, and when every file does, the part is the
// node it was; so a render after one file changed re-renders that file's
// section alone.
func (st *state) bootstrap() md.Node {
	n := len(BootstrapFiles)
	var m *bootMemo
	if st.boot != nil {
		m = st.boot.Load()
	}
	if m != nil && len(m.files) != n {
		m = nil
	}
	hit := m != nil
	var buf [maxBoot]bootFile
	files := append(buf[:0], make([]bootFile, n)...)
	for i, name := range BootstrapFiles {
		bf := &files[i]
		section := bootSection(i, name)
		bf.off, bf.cap = st.disabled(section), st.sectionCap(section)
		if !bf.off {
			bf.f, _ = st.ws.Read(name, &st.diags)
		}
		if m != nil && m.files[i].f == bf.f && m.files[i].off == bf.off && m.files[i].cap == bf.cap {
			*bf = m.files[i]
			st.diags = append(st.diags, bf.notes...)
			continue
		}
		hit = false
		f := bf.f
		if f == nil {
			continue
		}
		before := len(st.diags)
		var origin string
		switch {
		case strings.TrimSpace(f.Text) == "":
			st.diags.Add(workspace.Warning, f.Path, 0, "prompt.empty-file", "left out: the file is empty")
		case st.fileTemplate(name, f, &origin):
			st.diags.Add(workspace.Warning, f.Path, 0, "prompt.untouched-template", "left out: still %s", origin)
		default:
			bf.node = st.section(section,
				md.Title(2, md.Text(name)),
				md.Text(strings.TrimRight(f.Text, "\n")),
			).From(f.Path)
		}
		if len(st.diags) > before {
			bf.notes = slices.Clone(st.diags[before:])
		}
	}
	if hit {
		return m.node
	}
	var parts md.Group
	for i := range files {
		if files[i].node != nil {
			parts = append(parts, files[i].node)
		}
	}
	var node md.Node
	if len(parts) > 0 {
		node = md.Named("bootstrap", md.Doc(parts...))
	}
	if st.boot != nil {
		st.boot.Store(&bootMemo{files: slices.Clone(files), node: node})
	}
	return node
}

// memorySection is the assistant's "# Memory" part, kept as the same node
// while its parts are.
func (st *state) memorySection() md.Node {
	file, mem := st.memoryFile(2), st.structuredMemories(2)
	type key struct {
		file, mem md.Node
		cap       int
		off       bool
	}
	return st.memo(key{file, mem, st.sectionCap("memory"), st.disabled("memory")}, func() md.Node {
		return st.section("memory", st.assistantMemory(file, mem))
	})
}

// assistantMemory is "# Memory": the long-term memory file, then the
// structured memories by category.
func (st *state) assistantMemory(file, mem md.Node) md.Node {
	return md.Doc(
		md.Sec(1, "Memory",
			file,
			mem,
		),
	)
}

// memo returns the node cached under key, or builds and caches it; nil is
// a node too. A key must capture everything the node is built from.
func (st *state) memo(key any, build func() md.Node) md.Node {
	type box struct{ n md.Node }
	return st.nodes.get(key, func() any { return box{build()} }).(box).n
}

// DefaultMemoryFileBudget caps memory/MEMORY.md when loom.yaml sets no
// budget.sections.memory_file: a long-term memory file grows with every
// consolidation, and nothing else keeps it from crowding out the prompt.
const DefaultMemoryFileBudget = 2000

// memoryFile is memory/MEMORY.md, cut at a line boundary when it is over its
// own budget or when the prompt's budget needs the room.
func (st *state) memoryFile(level int) md.Node {
	if st.memoryText == nil {
		return nil
	}
	limit := st.sectionCap("memory_file")
	if limit == 0 {
		limit = DefaultMemoryFileBudget
	}
	nest := st.preset == Analyst
	type key struct {
		f            *workspace.File
		level, limit int
		nest         bool
	}
	return st.memo(key{st.memoryText, level, limit, nest}, func() md.Node {
		text := strings.TrimRight(st.memoryText.Text, "\n")
		if nest {
			// The analyst's prompt is one document of "##" sections: the
			// file's own headings go under its heading, not beside it.
			text = nestHeadings(text, level+1)
		}
		return md.Named("memory_file",
			md.Title(level, md.Text("Long-term Memory")),
			md.Text(text),
		).Prio(prioMemoryFile).Truncate(limit).From(st.memoryText.Path)
	})
}

// The skills parts are kept as the same nodes while the skill set is the
// same: a loader hands out the same *skills.Set while nothing changed.

func (st *state) activeSkills() md.Node {
	if st.skills == nil || st.disabled("active_skills") {
		return nil
	}
	// The section is the same node while the same always-on skills are
	// in it, whatever else in the set changed.
	n := st.skills.Active(skills.PromptOptions{ActiveMemo: st.active})
	type key struct{ n md.Node }
	return st.memo(key{n}, func() md.Node {
		return adopt(n, "active_skills", func(s *md.Scope) { s.Priority, s.Prioritized = prioActive, true }) // s is adopt's own
	})
}

func (st *state) skillsSummary() md.Node {
	if st.skills == nil || st.disabled("skills") {
		return nil
	}
	type key struct {
		set         *skills.Set
		preset      string
		cap         int
		budgeted    bool
		skipBuiltin bool
	}
	skip := st.listsBuiltinSkills()
	return st.memo(key{st.skills, st.preset, st.sectionCap("skills"), st.budget > 0, skip}, func() md.Node {
		var n md.Node
		if st.preset == Analyst {
			n = st.skills.Listing(skills.PromptOptions{Priority: prioSkills + min(len(st.skills.Skills), prioRange), Reuse: st.nodes.get, Entries: st.lists, SkipBuiltin: skip})
		} else {
			n = st.skills.Summary(skills.PromptOptions{Priority: prioSkills + min(len(st.skills.Skills), prioRange), Reuse: st.nodes.get, XMLMemo: st.skillsXML, Entries: st.entries, Unbudgeted: st.budget <= 0})
		}
		return adopt(n, "skills", func(s *md.Scope) {
			if c := st.sectionCap("skills"); c > 0 {
				s.Truncatable, s.MaxTokens = true, c // s is adopt's own copy
			}
		})
	})
}

// adopt makes n the top-level part called name, so that an override can
// place it with {{ section:NAME }} and the report lists it once under that
// name, and applies fn to it. A scope is renamed; anything else (a section
// with its heading) is wrapped in a new scope, and a scope that is the
// section's whole body loses its own name, so that the part is not listed
// twice.
func adopt(n md.Node, name string, fn func(*md.Scope)) md.Node {
	switch n := n.(type) {
	case nil:
		return nil
	case *md.Scope:
		if n == nil {
			return nil
		}
		c := *n
		c.Name = name
		fn(&c)
		return &c
	case *md.Section:
		if n == nil {
			return nil
		}
		if len(n.Body) == 1 {
			if sc, ok := n.Body[0].(*md.Scope); ok && sc != nil {
				inner := *sc
				inner.Name = ""
				c := *n
				c.Body = []md.Node{&inner}
				n = &c
			}
		}
		sc := md.Named(name, n)
		fn(sc)
		return sc
	}
	if isNil(n) {
		return nil
	}
	sc := md.Named(name, n)
	fn(sc)
	return sc
}

func skillsOpts(level int) skills.PromptOptions {
	return skills.PromptOptions{Level: level}
}

// isTemplate reports whether text is still a template nobody filled in, and
// sets *origin to where the template comes from.
func isTemplate(rel, text string, origin *string) bool {
	o, ok := starter.Template(rel, text)
	*origin = o
	return ok
}

// fileTemplate is isTemplate for a file read through the door, remembered
// while the file is unchanged.
func (st *state) fileTemplate(rel string, f *workspace.File, origin *string) bool {
	type key struct {
		rel string
		f   *workspace.File
	}
	type answer struct {
		origin string
		ok     bool
	}
	a := st.nodes.get(key{rel, f}, func() any {
		var a answer
		a.ok = isTemplate(rel, f.Text, &a.origin)
		return a
	}).(answer)
	*origin = a.origin
	return a.ok
}
