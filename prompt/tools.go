package prompt

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/prompt/naoproject"
	"github.com/loomctx/loom/prompt/toolrules"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// toolsCoveredElsewhere are tools whose rules are part of another section
// (the analyst's Tool Calls), so having no rule file of their own is normal.
var toolsCoveredElsewhere = []string{"execute_sql", "clarification"}

// naoAgentTools are the tools nao's own agent has in a web chat with its
// default settings (getTools in nao's agents/tools), which its renderer is
// always given. The analyst assumes them when no tool list is given, so a
// migrated project's prompt keeps every rule nao's would have; mcp_call
// and mcp_connect join them when the project has MCP servers, as in nao.
var naoAgentTools = []string{
	"clarification", "display_chart", "display_map", "execute_sql", "grep", "list", "load_skill",
	"read", "read_query_result", "search", "story", "suggest_follow_ups", "write",
}

// naoDefaultTools is the analyst's tool list when none was given.
func (st *state) naoDefaultTools() []string {
	tools := slices.Clone(naoAgentTools)
	if len(st.mcpServerList()) > 0 {
		tools = append(tools, "mcp_call", "mcp_connect")
	}
	return tools
}

// Caps on the lists the tool sections hold.
const (
	maxCustomCharts     = 50
	maxChartDescription = 200
)

// mcpServer is one MCP server the prompt lists.
type mcpServer struct{ name, description string }

// mcpServerList is loom.yaml's mcp_servers, then the servers of nao's
// agent/mcps/mcp.json that loom.yaml does not name, read once per render.
func (st *state) mcpServerList() []mcpServer {
	if st.mcpOnce {
		return st.mcpServers
	}
	st.mcpOnce = true
	var names []string
	for _, s := range st.cfg.MCPServers {
		st.mcpServers = append(st.mcpServers, mcpServer{s.Name, strings.TrimSpace(s.Description)})
		names = append(names, s.Name)
	}
	for _, n := range naoproject.MCPServers(st.ws, &st.diags) {
		if !slices.Contains(names, n) {
			st.mcpServers = append(st.mcpServers, mcpServer{name: n})
		}
	}
	return st.mcpServers
}

// toolSections is a section per tool the agent has, from package toolrules:
// what the tool is for and how to use it. It is nil when the agent has no
// tools (the analyst assumes nao's default set when none were named; the
// assistant has none unless --tools or loom.yaml's tools: names them), so
// that a prompt never explains a tool the model cannot call. A named tool
// without rules gets a diagnostic.
func (st *state) toolSections(level int) md.Node {
	tools := st.opts.Tools
	if len(tools) == 0 || st.disabled("tool_rules") {
		return nil
	}
	set := toolrules.Load(st.ws, &st.diags)
	rules, missing := set.For(tools)
	for _, t := range missing {
		if !st.defaultTools && !slices.Contains(toolsCoveredElsewhere, t) {
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
			if list = st.configuredDatabases(); list == nil {
				continue
			}
		case "custom_charts":
			if list = st.customCharts(); list == nil {
				continue
			}
		case "load_skill":
			if list = st.builtinSkillList(); list == nil {
				continue
			}
		case "mcp_call":
			servers := st.mcpServerList()
			if len(servers) == 0 {
				if !st.defaultTools {
					st.diags.Add(workspace.Warning, st.cfg.File, st.cfg.Line("tools"), "prompt.no-mcp-servers",
						"the agent has mcp_call but neither loom.yaml's mcp_servers nor %s names a server; the MCP section is left out", naoproject.MCPFile)
				}
				continue
			}
			var items []md.Node
			for _, s := range servers {
				if s.description != "" {
					items = append(items, md.Item(md.Bold(md.Text(s.name)), md.Raw(" — "), md.Text(s.description)))
				} else {
					items = append(items, md.Item(md.Bold(md.Text(s.name))))
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

// listsBuiltinSkills reports whether the prompt has a Built-in Skills
// section (the agent has load_skill), which then lists the built-in skills
// in place of the skills listing.
func (st *state) listsBuiltinSkills() bool {
	return st.preset == Analyst && hasTool(st.opts.Tools, "load_skill") && len(st.opts.Tools) > 0 &&
		!st.disabled("tool_rules") && st.builtinSkillList() != nil
}

// configuredDatabases lists the databases nao_config.yaml configures, by the
// name execute_sql's database_id takes, when there are two or more (with
// one, there is nothing to choose); nil otherwise.
func (st *state) configuredDatabases() md.Node {
	dbs := st.nao.Databases
	if len(dbs) < 2 {
		return nil
	}
	return md.UL(md.Map(dbs, func(d naoproject.Database) md.Node {
		if det := d.Details(); len(det) > 0 {
			return md.Item(md.Bold(md.Text(d.ID)), md.Raw(" — "), md.Text(strings.Join(det, ", ")))
		}
		return md.Item(md.Bold(md.Text(d.ID)))
	})...)
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

// customCharts lists agent/charts/'s chart plugins (see
// naoproject.Charts) by the type display_chart takes and their
// description, at most maxCustomCharts of them, each description cut to
// maxChartDescription characters.
func (st *state) customCharts() md.Node {
	charts := naoproject.Charts(st.ws, &st.diags)
	if len(charts) == 0 {
		return nil
	}
	var items []md.Node
	for _, c := range charts[:min(len(charts), maxCustomCharts)] {
		desc := c.Description
		if utf8.RuneCountInString(desc) > maxChartDescription {
			r := []rune(desc)
			desc = strings.TrimRightFunc(string(r[:maxChartDescription-1]), unicode.IsSpace) + "…"
		}
		if desc == "" {
			items = append(items, md.Item(md.Bold(md.Text(c.Type))))
		} else {
			items = append(items, md.Item(md.Bold(md.Text(c.Type)), md.Raw(": "), md.Text(desc)))
		}
	}
	if more := len(charts) - maxCustomCharts; more > 0 {
		items = append(items, md.Item(md.Textf("and %d more in agent/charts/: list that folder to see them", more)))
	}
	return md.UL(items...)
}
