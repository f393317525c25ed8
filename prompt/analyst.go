package prompt

import (
	"slices"
	"strings"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/prompt/dialects"
	"github.com/loomctx/loom/workspace"
)

// analystSections are the parts of the analyst prompt, nao's structure: the
// instructions and rules, then a "---"-separated tail of what this project
// adds (its rules, connections, skills and memory).
func (st *state) analystSections() []md.Node {
	return []md.Node{
		st.section("instructions", md.Sec(2, "Instructions", st.instructions())),
		st.section("context", st.contextLayout()),
		st.section("persona", md.Sec(2, "Persona", wording("persona", nil))),
		st.section("tools", md.Sec(2, "Tool Calls", st.toolRules())),
		st.section("tool_rules", st.toolSections(2)),
		st.section("sql", md.Sec(2, "SQL Query Rules", st.sqlRules())),
		st.section("citations", md.Sec(2, "Citation Rules", wording("citations", map[string]string{"Tool": "execute_sql"}))),
		st.section("formatting", md.Sec(2, "Formatting Rules", wording("formatting", nil))),
		&md.Block{Sep: partSep, Children: []md.Node{
			st.userRules(),
			st.section("connections", st.connectionList()),
			st.skillsSummary(),
			st.section("memory", st.analystMemory()),
		}},
	}
}

func (st *state) instructions() md.Node {
	name := st.cfg.Name
	if name == "" {
		name = "loom"
	}
	return wording("instructions", map[string]string{
		"Name": name,
		"Date": st.now.In(st.loc).Format("Monday, January 2, 2006") + " (" + st.loc.String() + ")",
	})
}

// contextLayout lists how the project's context is laid out, naming only
// what this workspace has.
func (st *state) contextLayout() md.Node {
	ws := st.ws
	var items []md.Node
	if ws.Exists("RULES.md") {
		items = append(items, md.Item(md.Code("RULES.md"), md.Text(" — the project's own rules and conventions; read it before anything else.")))
	}
	if ws.IsDir("semantics") {
		items = append(items, md.Item(md.Code("semantics/"), md.Text(" — how metrics and business terms are defined.")))
	}
	if ws.IsDir("docs") {
		notion := md.If(ws.IsDir("docs/notion"), md.Span(md.Text(" Pages exported from Notion are under "), md.Code("docs/notion/"), md.Text(".")))
		items = append(items, md.Item(md.Code("docs/"), md.Text(" — business documentation."), notion))
	}
	if repos := st.repos(); len(repos) > 0 {
		items = append(items, md.Item(md.Code(strings.Join(repos, ", ")), md.Text(" — source code repositories.")))
	}
	if ws.IsDir("databases") {
		items = append(items, md.Item(
			md.Code("databases/"),
			md.Text(" — what is known about each warehouse, one folder per table: "),
			md.Code("type=<type>/database=<database>/schema=<schema>/table=<table>/"),
			md.Text(". A table folder holds Markdown files:"),
			st.tableFiles(),
		))
	}
	if ws.IsDir("agent/skills") || ws.IsDir("skills") {
		items = append(items, md.Item(md.Text("Skills — step-by-step guides for recurring tasks, listed below with where to read them.")))
	}
	if len(items) == 0 {
		return nil
	}
	return md.Sec(2, "How This Project Is Organised",
		md.Text("Everything you know about this project is in files in its folder:"),
		md.UL(items...),
	)
}

// templateText says what each table file nao can generate holds, in the
// order nao lists them (naoproject.Templates).
var templateText = map[string]string{
	"columns":       " — the columns and their types.",
	"preview":       " — a few sample rows.",
	"profiling":     " — statistics of each column's values, when they were generated.",
	"query_history": " — queries that were run on the table: how people use it.",
	"ai_summary":    " — a generated summary of what the table holds",
}

// tableFiles lists the files a table folder holds: annotations.md, then
// the templates nao_config.yaml configures (nao's default, columns and
// preview, without one).
func (st *state) tableFiles() md.Node {
	items := []md.Node{md.Item(md.Code("annotations.md"), md.Text(" — notes written by people; when it disagrees with a generated file, it is right."))}
	templates := st.nao.Templates
	for _, t := range templates {
		text, ok := templateText[t]
		if !ok {
			continue
		}
		if t == "ai_summary" {
			var check []string
			for _, c := range []string{"columns", "profiling"} {
				if slices.Contains(templates, c) {
					check = append(check, "`"+c+".md`")
				}
			}
			if len(check) > 0 {
				text += "; check what it says against " + strings.Join(check, " and ")
			}
			text += "."
			items = append(items, md.Item(md.Code(t+".md"), md.Raw(text)))
			continue
		}
		items = append(items, md.Item(md.Code(t+".md"), md.Text(text)))
	}
	return md.UL(items...)
}

// repos are the source repositories the project has: the repos
// nao_config.yaml names (as nao lists them), else the folders in repos/.
func (st *state) repos() []string {
	if st.nao.Found {
		out := make([]string, len(st.nao.Repos))
		for i, r := range st.nao.Repos {
			out[i] = "repos/" + r + "/"
		}
		return out
	}
	return st.subfolders("repos")
}

func (st *state) subfolders(dir string) []string {
	entries, err := st.ws.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, dir+"/"+e.Name()+"/")
		}
	}
	return out
}

func (st *state) toolRules() md.Node {
	var dialectRules []md.Node
	for _, d := range st.dialects {
		for _, r := range d.Tools {
			dialectRules = append(dialectRules, md.Item(dialectText(d, r)))
		}
	}
	return md.Lines(
		wording("tool-calls", map[string]bool{
			"SQL":     hasTool(st.opts.Tools, "execute_sql"),
			"Clarify": !st.opts.TestMode && hasTool(st.opts.Tools, "clarification"),
		}),
		md.UL(dialectRules...),
	)
}

// sqlRules are loom's general rules, then one item per connected dialect
// with that dialect's rules nested under its label, so that no rule reads as
// if it held for every database.
func (st *state) sqlRules() md.Node {
	var dialectRules []md.Node
	for _, d := range st.dialects {
		if len(d.SQL) == 0 {
			continue
		}
		rules := make([]md.Node, len(d.SQL))
		for i, r := range d.SQL {
			rules[i] = md.Item(dialectText(d, r))
		}
		dialectRules = append(dialectRules, md.Item(md.Bold(md.Text(d.Label), md.Raw(":")), md.UL(rules...)))
	}
	return md.Lines(wording("sql-rules", nil), md.UL(dialectRules...))
}

// dialectText is a rule as it should enter the prompt: loom's own rules are
// loom's text, a workspace's are workspace text.
func dialectText(d dialects.Dialect, rule string) md.Node {
	if strings.HasPrefix(d.Source, "builtin:") {
		return md.Raw(rule)
	}
	return md.Text(rule)
}

func (st *state) userRules() md.Node {
	if st.disabled("rules") {
		return nil
	}
	f, ok := st.ws.Read("RULES.md", &st.diags)
	if !ok {
		return nil
	}
	var origin string
	switch {
	case strings.TrimSpace(f.Text) == "":
		return nil
	case st.fileTemplate(f.Path, f, &origin):
		st.diags.Add(workspace.Warning, f.Path, 0, "prompt.untouched-template", "left out: still %s", origin)
		return nil
	}
	return st.section("rules", md.Sec(2, "User Rules", md.Text(strings.TrimRight(f.Text, "\n")))).From(f.Path)
}

func (st *state) connectionList() md.Node {
	if len(st.connections) == 0 {
		return nil
	}
	return md.Sec(2, "Current Connections", md.UL(md.Map(st.connections, func(c Connection) md.Node {
		return md.Item(md.Text(c.Type), md.Raw(" database="), md.Text(c.Database))
	})))
}
