// Package toolrules holds the prompt sections that explain the agent's
// tools: what a tool is for and the rules for using it well. A section is
// added only for a tool the agent has, named with --tools or loom.yaml's
// tools:, so a prompt never describes a tool the model cannot call.
//
// Rules are data: one Markdown file per tool, embedded from data/, that a
// workspace can replace, or add to, with agent/tools/<tool>.md:
//
//	---
//	title: Saved Files
//	order: 10
//	requires: write
//	---
//	- Files you save with the write tool …
//
// title defaults to the file name, order to 1000 (after the built-ins), and
// requires, the tool that switches the section on, to the file name. A
// workspace file named like a built-in replaces it, inheriting its title,
// order and requires unless it sets them.
//
// Built-in rules exist for write (Saved Files), execute_sql (The Local
// Database, and Databases when two or more are connected), display_chart
// (Chart Rules, and Custom Charts when agent/charts/ has charts), display_map
// (Map Rules), load_skill (Built-in Skills, with the built-in skills listed)
// and mcp_call (MCP Servers, with the servers loom.yaml names).
package toolrules

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/loomctx/loom/workspace"
)

//go:embed data/*.md
var builtinFS embed.FS

// Dir is the workspace folder for extra or replacement rule files.
const Dir = "agent/tools"

// defaultOrder places workspace rules after the built-ins.
const defaultOrder = 1000

// Rule is one tool's section.
type Rule struct {
	Name     string // the file name without .md
	Title    string
	Order    int
	Requires string // the tool that switches the section on
	Body     string
	Source   string // "builtin:<name>.md" or the workspace file
}

// Builtin reports whether the rule is loom's own text.
func (r Rule) Builtin() bool { return strings.HasPrefix(r.Source, "builtin:") }

// Set is every rule known to one workspace, by name.
type Set struct {
	byName map[string]Rule
}

// Builtins lists the tools that have built-in rules, sorted.
func Builtins() []string {
	s := builtins()
	var out []string
	seen := map[string]bool{}
	for _, r := range s.byName {
		if !seen[r.Requires] {
			seen[r.Requires] = true
			out = append(out, r.Requires)
		}
	}
	sort.Strings(out)
	return out
}

func builtins() *Set {
	s := &Set{byName: map[string]Rule{}}
	entries, _ := fs.ReadDir(builtinFS, "data")
	for _, e := range entries {
		b, err := fs.ReadFile(builtinFS, "data/"+e.Name())
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".md")
		r, _ := parse(name, string(b), Rule{Name: name, Title: name, Order: defaultOrder, Requires: name})
		r.Source = "builtin:" + e.Name()
		s.byName[name] = r
	}
	return s
}

// Load returns the built-in rules with the workspace's agent/tools/*.md
// applied. A file that cannot be read is reported and skipped.
func Load(ws *workspace.Workspace, diags *workspace.Diagnostics) *Set {
	s := builtins()
	entries, err := ws.ReadDir(Dir)
	if err != nil {
		return s
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rel := path.Join(Dir, e.Name())
		f, ok := ws.Read(rel, diags)
		if !ok {
			continue
		}
		name := strings.ToLower(strings.TrimSuffix(e.Name(), ".md"))
		base, known := s.byName[name]
		if !known {
			base = Rule{Name: name, Title: name, Order: defaultOrder, Requires: name}
		}
		r, problems := parse(name, f.Text, base)
		for _, p := range problems {
			diags.Add(workspace.Warning, f.Path, p.line, "tools.frontmatter", "%s", p.msg)
		}
		r.Source = f.Path
		if strings.TrimSpace(r.Body) == "" {
			diags.Add(workspace.Warning, f.Path, 0, "tools.empty", "no rules in the file; the %s section is left out", name)
		}
		s.byName[name] = r
	}
	return s
}

// For returns the rules for the tools the agent has, in order; a rule whose
// body is empty is left out. Tools without any rule are returned in missing,
// so the caller can say so.
func (s *Set) For(tools []string) (rules []Rule, missing []string) {
	has := map[string]bool{}
	for _, t := range tools {
		has[t] = true
	}
	covered := map[string]bool{}
	for _, r := range s.byName {
		if has[r.Requires] {
			covered[r.Requires] = true
			if strings.TrimSpace(r.Body) != "" {
				rules = append(rules, r)
			}
		}
	}
	sort.Slice(rules, func(i, j int) bool {
		if rules[i].Order != rules[j].Order {
			return rules[i].Order < rules[j].Order
		}
		return rules[i].Name < rules[j].Name
	})
	for _, t := range tools {
		if !covered[t] && !slicesContains(missing, t) {
			missing = append(missing, t)
		}
	}
	return rules, missing
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

type problem struct {
	line int
	msg  string
}

// parse reads an optional front matter of flat "key: value" lines (title,
// order, requires) and the body after it, starting from base.
func parse(name, text string, base Rule) (Rule, []problem) {
	r := base
	var problems []problem
	body := text
	if first, rest, ok := strings.Cut(text, "\n"); ok && strings.TrimSpace(first) == "---" {
		var head, after string
		closed := true
		if strings.HasPrefix(rest, "---") {
			after = rest[3:]
		} else {
			head, after, closed = strings.Cut(rest, "\n---")
		}
		if closed {
			_, body, _ = strings.Cut(after, "\n") // the rest of the closing line
			for i, line := range strings.Split(head, "\n") {
				if strings.TrimSpace(line) == "" {
					continue
				}
				k, v, ok := strings.Cut(line, ":")
				k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"'`)
				switch {
				case !ok:
					problems = append(problems, problem{i + 2, "front matter line is not key: value; ignored"})
				case k == "title":
					r.Title = v
				case k == "requires":
					r.Requires = v
				case k == "order":
					n, err := strconv.Atoi(v)
					if err != nil {
						problems = append(problems, problem{i + 2, "order must be a whole number; ignored"})
					} else {
						r.Order = n
					}
				default:
					problems = append(problems, problem{i + 2, "unknown front matter key " + strconv.Quote(k) + "; ignored"})
				}
			}
		}
	}
	r.Body = strings.TrimSpace(body)
	return r, problems
}
