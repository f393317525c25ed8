package prompt_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// Tests for what a project moved from nao keeps (issue #31, items 1 to 6).
// The expected texts were checked by hand against nao's renderer
// (nao_demo@d58c927: system-prompt.tsx, utils/nao-config.ts,
// services/chart-plugin.service.ts) run on the same files; see
// bench/compat/ for the side-by-side run.

func analyst(t *testing.T, files map[string]string, opts prompt.Options) *prompt.Result {
	t.Helper()
	opts.Preset = prompt.Analyst
	return render(t, write(t, files), opts)
}

var sqlTools = []string{"execute_sql"}

// ## Databases lists nao_config.yaml's databases[].name, the ids nao's
// execute_sql accepts, only when two or more are configured; never ids made
// from folder names.
func TestNaoConfigDatabases(t *testing.T) {
	folders := map[string]string{
		"databases/type=postgres/database=app/schema=public/table=t/columns.md": "id\n",
		"databases/type=duckdb/database=jaffle/schema=main/table=t/columns.md":  "id\n",
	}
	with := func(cfg string) map[string]string {
		m := map[string]string{"nao_config.yaml": cfg}
		for k, v := range folders {
			m[k] = v
		}
		return m
	}
	res := analyst(t, with(`project_name: shop
databases:
  - name: app-pg
    type: postgres
    host: db.internal
    database: app
  - name: lake
    type: bigquery
    project_id: 123456
    dataset_id: raw
  - name: local
    type: duckdb
    path: ./data/jaffle_shop.duckdb
  - type: duckdb
    path: nameless.duckdb
notion:
  api_key: {{ env('NOTION_API_KEY') }}
`), prompt.Options{Tools: sqlTools})
	want := "## Databases\n\nThis project is connected to more than one database. Give **execute_sql** the `database_id` of the one you mean; it must be one of:\n\n" +
		"- **app-pg** — type=postgres, database=app\n" +
		"- **lake** — type=bigquery, project_id=123456, dataset_id=raw\n" +
		"- **local** — type=duckdb, database=jaffle_shop\n\n"
	if !strings.Contains(res.Prompt, want) {
		t.Errorf("no Databases section of nao_config.yaml's names:\n%s", res.Prompt)
	}
	if strings.Contains(res.Prompt, "postgres_app") || strings.Contains(res.Prompt, "duckdb_jaffle") {
		t.Error("ids made from folder names are still listed")
	}
	if len(res.Report.Diagnostics) != 0 {
		t.Errorf("diagnostics: %v", res.Report.Diagnostics)
	}

	one := analyst(t, with("databases:\n  - name: app-pg\n    type: postgres\n"), prompt.Options{Tools: sqlTools})
	none := analyst(t, folders, prompt.Options{Tools: sqlTools})
	for name, r := range map[string]*prompt.Result{"one configured": one, "no nao_config.yaml": none} {
		if strings.Contains(r.Prompt, "## Databases") {
			t.Errorf("%s: a Databases section, though there is nothing to choose from", name)
		}
	}

	bad := analyst(t, with("databases:\n  - name: a\n    type: [postgres\n"), prompt.Options{Tools: sqlTools})
	if !hasDiag(bad, "nao_config.yaml", "cannot be read as YAML") {
		t.Errorf("no diagnostic naming nao_config.yaml: %v", bad.Report.Diagnostics)
	}
	for _, d := range bad.Report.Diagnostics {
		if d.Path == "nao_config.yaml" && d.Line == 0 {
			t.Errorf("the diagnostic has no line: %v", d)
		}
	}
}

// "How This Project Is Organised" lists the table files nao_config.yaml's
// templates (or the older accessors) configure and the repos it names.
func TestNaoConfigTemplatesAndRepos(t *testing.T) {
	files := map[string]string{
		"databases/type=duckdb/database=x/schema=s/table=t/columns.md": "id\n",
		"repos/stray/README.md": "not configured\n",
		"nao_config.yaml": `databases:
  - name: a
    type: duckdb
    templates: [columns, ai_summary, profiling]
  - name: b
    type: duckdb
    accessors: [description, how_to_use]
repos:
  - name: dbt
    url: https://github.com/dbt-labs/jaffle_shop_duckdb.git
  - name: web
  - url: https://example.com/nameless.git
`,
	}
	p := analyst(t, files, prompt.Options{Tools: sqlTools}).Prompt
	want := "A table folder holds Markdown files:\n" +
		"  - `annotations.md` — notes written by people; when it disagrees with a generated file, it is right.\n" +
		"  - `columns.md` — the columns and their types.\n" +
		"  - `profiling.md` — statistics of each column's values, when they were generated.\n" +
		"  - `query_history.md` — queries that were run on the table: how people use it.\n" +
		"  - `ai_summary.md` — a generated summary of what the table holds; check what it says against `columns.md` and `profiling.md`.\n"
	if !strings.Contains(p, want) {
		t.Errorf("table files are not the configured templates:\n%s", p)
	}
	if strings.Contains(p, "preview.md") || strings.Contains(p, "description.md") {
		t.Error("a template that is not configured is listed")
	}
	if !strings.Contains(p, "- `repos/dbt/, repos/web/` — source code repositories.") || strings.Contains(p, "stray") {
		t.Errorf("repos are not the configured ones:\n%s", p)
	}

	// Without nao_config.yaml: nao's default templates, and the folders in repos/.
	delete(files, "nao_config.yaml")
	p = analyst(t, files, prompt.Options{Tools: sqlTools}).Prompt
	if !strings.Contains(p, "`columns.md`") || !strings.Contains(p, "`preview.md`") || strings.Contains(p, "profiling.md") {
		t.Errorf("default templates:\n%s", p)
	}
	if !strings.Contains(p, "`repos/stray/`") {
		t.Errorf("without nao_config.yaml the repos/ folders are listed:\n%s", p)
	}
}

// agent/charts/ holds nao chart plugins: <type>.js or <type>.mjs modules,
// named and described by <type>.json; nothing else is a chart.
func TestNaoChartPlugins(t *testing.T) {
	res := analyst(t, map[string]string{
		"agent/charts/bubble.js":         "export function render() {}\n",
		"agent/charts/bubble.json":       `{"name": "Bubble", "description": "  Three measures at once: x, y and size.  "}`,
		"agent/charts/progress-bars.mjs": "export default {}\n",
		"agent/charts/only-meta.json":    `{"name": "No module", "description": "not a chart without its module"}`,
		"agent/charts/line.js":           "// shadows a built-in type: not a plugin\n",
		"agent/charts/Upper.js":          "// not a valid type name\n",
		"agent/charts/twice.js":          "//\n",
		"agent/charts/twice.mjs":         "//\n",
		"agent/charts/bad-meta.js":       "//\n",
		"agent/charts/bad-meta.json":     "{\"name\": 12,\n}",
		"agent/charts/README.md":         "# Charts\n",
	}, prompt.Options{Tools: []string{"display_chart"}})
	want := "## Custom Charts\n\nBesides the standard chart types, this project has chart plugins of its own, in `agent/charts/`. To draw one, give its type below as **display_chart**'s `chart_type`, and only when its description fits what was asked. They show in interactive chats only: keep them out of stories and exports.\n\n" +
		"- **bad-meta**\n" +
		"- **bubble**: Three measures at once: x, y and size.\n" +
		"- **progress-bars**"
	if !strings.Contains(res.Prompt, want) {
		t.Errorf("custom charts:\n%s", res.Prompt)
	}
	for _, not := range []string{"only-meta", "**line**", "Upper", "twice", "README", "export function"} {
		if strings.Contains(res.Prompt, not) {
			t.Errorf("%q is listed as a chart", not)
		}
	}
	if !hasDiag(res, "agent/charts/twice.js", "both a .js and an .mjs") || !hasDiag(res, "agent/charts/bad-meta.json", "") {
		t.Errorf("diagnostics: %v", res.Report.Diagnostics)
	}

	// A long description is cut to 200 characters, as nao cuts it.
	long := strings.Repeat("word ", 60)
	p := analyst(t, map[string]string{
		"agent/charts/long.js":   "//\n",
		"agent/charts/long.json": `{"description": "` + long + `"}`,
	}, prompt.Options{Tools: []string{"display_chart"}}).Prompt
	if !strings.Contains(p, "- **long**: "+strings.TrimSpace(long[:199])+"…") {
		t.Errorf("long description:\n%s", p)
	}
}

// nao's agent/mcps/mcp.json declares MCP servers: mcp_call lists them, after
// loom.yaml's, without a warning about loom.yaml.
func TestNaoMCPJSON(t *testing.T) {
	files := map[string]string{
		"agent/mcps/mcp.json": `{"mcpServers": {"metabase": {"command": "npx", "env": {"KEY": "${METABASE_API_KEY}"}}, "linear": {"command": "x"}, "bi-sales": {}}}`,
		"RULES.md":            "Use EUR.\n",
	}
	res := analyst(t, files, prompt.Options{Tools: []string{"mcp_call"}})
	if !strings.Contains(res.Prompt, "- **metabase**\n- **linear**\n- **bi-sales**") {
		t.Errorf("mcp.json's servers are not listed:\n%s", res.Prompt)
	}
	if len(res.Report.Diagnostics) != 0 {
		t.Errorf("diagnostics: %v", res.Report.Diagnostics)
	}
	files["loom.yaml"] = "mcp_servers:\n  - name: linear\n    description: Issue tracker\n"
	res = analyst(t, files, prompt.Options{Tools: []string{"mcp_call"}})
	if !strings.Contains(res.Prompt, "- **linear** — Issue tracker\n- **metabase**\n- **bi-sales**") {
		t.Errorf("loom.yaml's servers first, each once:\n%s", res.Prompt)
	}
	files["agent/mcps/mcp.json"] = "{\"mcpServers\": {\n  \"a\": {},\n  \"b\": \n}"
	delete(files, "loom.yaml")
	res = analyst(t, files, prompt.Options{Tools: []string{"mcp_call"}})
	if !hasDiag(res, "agent/mcps/mcp.json", "cannot be read as JSON") || !hasDiag(res, "", "neither loom.yaml's mcp_servers nor agent/mcps/mcp.json") {
		t.Errorf("diagnostics: %v", res.Report.Diagnostics)
	}
}

// With load_skill, the built-in skills are listed once, in Built-in Skills
// (call load_skill); without it, in the Skills listing (read the file).
func TestBuiltinSkillsListedOnce(t *testing.T) {
	files := map[string]string{
		"RULES.md":              "Use EUR.\n",
		"agent/skills/churn.md": "---\nname: churn\ndescription: Compute churn\n---\nSteps.\n",
	}
	with := analyst(t, files, prompt.Options{Tools: []string{"execute_sql", "load_skill"}}).Prompt
	for _, name := range []string{"plan-task", "write-skill", "handoff-notes"} {
		if n := strings.Count(with, name); n != 1 {
			t.Errorf("with load_skill, %s appears %d times, want 1", name, n)
		}
	}
	if !strings.Contains(with, "### Skill: churn") || !strings.Contains(with, "- **plan-task** — ") {
		t.Errorf("with load_skill:\n%s", with)
	}
	without := analyst(t, files, prompt.Options{Tools: sqlTools}).Prompt
	if strings.Contains(without, "## Built-in Skills") || !strings.Contains(without, "### Skill: plan-task") {
		t.Errorf("without load_skill the built-in skills belong in the listing:\n%s", without)
	}
}

// MEMORY.md's headings nest under the analyst's memory section instead of
// becoming top-level sections of the prompt.
func TestMemoryHeadingsNested(t *testing.T) {
	res := analyst(t, map[string]string{
		"RULES.md":         "Use EUR.\n",
		"memory/MEMORY.md": "# About the user\n\nAnn, finance.\n\n## Preferences\n\n- EUR\n\n```sh\n# a comment, not a heading\n```\n\nProjects\n========\n\n- Q3 close\n",
	}, prompt.Options{Tools: sqlTools})
	top := regexp.MustCompile(`(?m)^#{1,2} (.*)$`).FindAllStringSubmatch(res.Prompt, -1)
	var got []string
	for _, m := range top {
		if m[1] != "a comment, not a heading" { // inside the code fence
			got = append(got, m[1])
		}
	}
	want := "Instructions|How This Project Is Organised|Persona|Tool Calls|The Local Database|SQL Query Rules|Citation Rules|Formatting Rules|User Rules|Skills|Memory"
	if strings.Join(got, "|") != want {
		t.Errorf("top-level headings\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	for _, w := range []string{"### Long-term Memory\n\n#### About the user\n\nAnn, finance.\n\n##### Preferences", "# a comment, not a heading", "#### Projects\n\n- Q3 close"} {
		if !strings.Contains(res.Prompt, w) {
			t.Errorf("missing %q in\n%s", w, res.Prompt)
		}
	}
}

func TestNestHeadings(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"# A\ntext\n## B", "### A\ntext\n#### B"},
		{"#### deep\n##### deeper", "#### deep\n##### deeper"}, // deep enough already
		{"## A\n###### F", "### A\n###### F"},                  // never past 6
		{"Title\n---\n\n- x\n---", "### Title\n\n- x\n---"},    // setext h2; a rule after a list item stays
		{"~~~\n# in a fence\n~~~\n# out", "~~~\n# in a fence\n~~~\n### out"},
		{"#hashtag\n    # indented code", "#hashtag\n    # indented code"}, // neither is a heading
	} {
		if got := prompt.NestHeadings(tt.in, 3); got != tt.want {
			t.Errorf("NestHeadings(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// With no tool list, the analyst assumes the tools nao's own agent has, so a
// migrated project keeps every rule nao's prompt has, and the report says
// so, naming them (one warning, nothing else); an explicitly empty list
// means none, and a named list gives no such warning.
func TestAnalystDefaultTools(t *testing.T) {
	files := map[string]string{
		"RULES.md":            "Use EUR.\n",
		"agent/mcps/mcp.json": `{"mcpServers": {"metabase": {}}}`,
	}
	res := analyst(t, files, prompt.Options{})
	for _, h := range []string{"## Saved Files", "## The Local Database", "## Chart Rules", "## Map Rules", "## Built-in Skills", "## MCP Servers", "execute_sql", "**clarification**"} {
		if !strings.Contains(res.Prompt, h) {
			t.Errorf("no %q without a tool list", h)
		}
	}
	ds := res.Report.Diagnostics
	if len(ds) != 1 || ds[0].Code != "prompt.default-tools" || ds[0].Severity != workspace.Warning ||
		!strings.Contains(ds[0].Message, "nao's default tools (clarification, display_chart, display_map, execute_sql, grep, list, load_skill, read, read_query_result, search, story, suggest_follow_ups, write, mcp_call, mcp_connect)") {
		t.Errorf("the default tool set is not said once in the report: %v", ds)
	}
	delete(files, "agent/mcps/mcp.json")
	if p := analyst(t, files, prompt.Options{}).Prompt; strings.Contains(p, "## MCP Servers") {
		t.Error("mcp_call assumed without MCP servers")
	}
	emptyRes := analyst(t, files, prompt.Options{Tools: []string{}})
	if hasCode(emptyRes, "prompt.default-tools") {
		t.Errorf("an empty tool list reported as the default set: %v", emptyRes.Report.Diagnostics)
	}
	empty := emptyRes.Prompt
	for _, h := range []string{"## Saved Files", "## The Local Database", "## Built-in Skills", "run it with execute_sql", "**clarification**"} {
		if strings.Contains(empty, h) {
			t.Errorf("%q with an empty tool list", h)
		}
	}
	// loom.yaml's tools: is a tool list too.
	files["loom.yaml"] = "tools: [execute_sql]\n"
	named := analyst(t, files, prompt.Options{})
	if p := named.Prompt; strings.Contains(p, "## Saved Files") || !strings.Contains(p, "## The Local Database") {
		t.Errorf("loom.yaml tools: ignored:\n%s", p)
	}
	if hasCode(named, "prompt.default-tools") {
		t.Errorf("loom.yaml's tools reported as the default set: %v", named.Report.Diagnostics)
	}
}

// nanobot HEAD's untouched onboarding files are left out as HEAD leaves
// them out: AGENTS.md (new at HEAD), USER.md and memory/MEMORY.md; SOUL.md
// is kept, as HEAD keeps it. Filled in, AGENTS.md is kept.
func TestNanobotHeadWorkspace(t *testing.T) {
	dir := copyTree(t, "../testdata/workspaces/nanobot-head")
	res := render(t, dir, prompt.Options{})
	if res.Report.Preset != prompt.Assistant {
		t.Fatalf("preset %s", res.Report.Preset)
	}
	for _, f := range []string{"AGENTS.md", "USER.md", "memory/MEMORY.md"} {
		if !hasDiag(res, f, "nanobot's onboarding") {
			t.Errorf("no diagnostic for nanobot HEAD's %s template: %v", f, res.Report.Diagnostics)
		}
	}
	for _, h := range []string{"## AGENTS.md", "## USER.md", "Long-term Memory"} {
		if strings.Contains(res.Prompt, h) {
			t.Errorf("%s: an untouched nanobot template is in the prompt", h)
		}
	}
	if !strings.Contains(res.Prompt, "## SOUL.md") {
		t.Error("SOUL.md left out")
	}
	p := filepath.Join(dir, "AGENTS.md")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append(b, "\n- Answer in French.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := render(t, dir, prompt.Options{}).Prompt; !strings.Contains(got, "## AGENTS.md") || !strings.Contains(got, "Answer in French.") {
		t.Error("a filled-in AGENTS.md is left out")
	}
}

func hasCode(res *prompt.Result, code string) bool {
	for _, d := range res.Report.Diagnostics {
		if d.Code == code {
			return true
		}
	}
	return false
}
