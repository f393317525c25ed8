package prompt

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/prompt/toolrules"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// toolsCoveredElsewhere are tools whose rules are part of another section
// (the analyst's Tool Calls), so having no rule file of their own is normal.
var toolsCoveredElsewhere = []string{"execute_sql", "clarification"}

// Caps on the lists the tool sections hold.
const (
	maxCustomCharts     = 50
	maxChartDescription = 200
)

// toolSections is a section per tool the agent has, from package toolrules:
// what the tool is for and how to use it. It is nil unless tools were named
// (--tools or loom.yaml's tools:), so that a prompt never explains a tool the
// model cannot call. A named tool without rules gets a diagnostic.
func (st *state) toolSections(level int) md.Node {
	tools := st.opts.Tools
	if len(tools) == 0 || st.disabled("tool_rules") {
		return nil
	}
	set := toolrules.Load(st.ws, &st.diags)
	rules, missing := set.For(tools)
	for _, t := range missing {
		if !slices.Contains(toolsCoveredElsewhere, t) {
			st.diags.Add(workspace.Warning, "", 0, "prompt.tool-without-rules",
				"tool %q has no rules in the prompt; add %s/%s.md to give it some", t, toolrules.Dir, t)
		}
	}
	var parts []md.Node
	for _, r := range rules {
		var body md.Node = md.Raw(r.Body)
		if !r.Builtin() {
			body = md.Text(r.Body)
		}
		var list md.Node
		switch r.Name {
		case "databases":
			if len(st.connections) < 2 {
				continue
			}
			list = md.UL(md.Map(st.connections, func(c Connection) md.Node {
				return md.Item(md.Bold(md.Text(c.Type+"_"+c.Database)), md.Raw(" — type="), md.Text(c.Type), md.Raw(", database="), md.Text(c.Database))
			})...)
		case "custom_charts":
			if list = st.customCharts(); list == nil {
				continue
			}
		case "load_skill":
			if list = st.builtinSkillList(); list == nil {
				continue
			}
		case "mcp_call":
			if len(st.cfg.MCPServers) == 0 {
				st.diags.Add(workspace.Warning, st.cfg.File, st.cfg.Line("tools"), "prompt.no-mcp-servers",
					"the agent has mcp_call but loom.yaml names no mcp_servers; the MCP section is left out")
				continue
			}
			var items []md.Node
			for _, s := range st.cfg.MCPServers {
				if d := strings.TrimSpace(s.Description); d != "" {
					items = append(items, md.Item(md.Bold(md.Text(s.Name)), md.Raw(" — "), md.Text(d)))
				} else {
					items = append(items, md.Item(md.Bold(md.Text(s.Name))))
				}
			}
			list = md.UL(items...)
		}
		parts = append(parts, md.Named("tool:"+r.Name, md.Sec(level, r.Title, body, list)).From(r.Source))
	}
	if len(parts) == 0 {
		return nil
	}
	return md.Doc(parts...)
}

// builtinSkillList lists loom's built-in skills by name and description, for
// the load_skill section; nil when there are none.
func (st *state) builtinSkillList() md.Node {
	if st.skills == nil {
		return nil
	}
	var items []md.Node
	for _, sk := range st.skills.Usable() {
		if sk.Source != skills.SourceBuiltin {
			continue
		}
		items = append(items, md.Item(md.Bold(md.Text(sk.Name)), md.Raw(" — "), md.Text(strings.TrimSpace(sk.Description()))))
	}
	if len(items) == 0 {
		return nil
	}
	return md.UL(items...)
}

// customCharts lists agent/charts/*: each chart's file and the first line
// of its text as a description, at most maxCustomCharts of them.
func (st *state) customCharts() md.Node {
	entries, err := st.ws.ReadDir("agent/charts")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	var items []md.Node
	for _, n := range names[:min(len(names), maxCustomCharts)] {
		rel := path.Join("agent/charts", n)
		desc := ""
		if f, ok := st.ws.Read(rel, &st.diags); ok {
			desc = firstLine(f.Text)
		}
		if utf8.RuneCountInString(desc) > maxChartDescription {
			r := []rune(desc)
			desc = strings.TrimRight(string(r[:maxChartDescription-1]), " ") + "…"
		}
		if desc == "" {
			items = append(items, md.Item(md.Code(rel)))
		} else {
			items = append(items, md.Item(md.Code(rel), md.Raw(" — "), md.Text(desc)))
		}
	}
	if more := len(names) - maxCustomCharts; more > 0 {
		items = append(items, md.Item(md.Textf("and %d more in agent/charts/: list that folder to see them", more)))
	}
	return md.UL(items...)
}

// firstLine is the first non-blank line of text without Markdown heading
// marks or front matter fences.
func firstLine(text string) string {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
		if line != "" && line != "---" && line != "{" {
			return line
		}
	}
	return ""
}
