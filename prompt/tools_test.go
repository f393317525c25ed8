package prompt_test

import (
	"strings"
	"testing"

	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/prompt/toolrules"
)

func TestToolSections(t *testing.T) {
	dir := write(t, map[string]string{
		"RULES.md": "Use EUR.\n",
		"databases/type=postgres/database=shop/schema=public/table=orders/columns.md": "id\n",
		"databases/type=bigquery/database=lake/schema=raw/table=events/columns.md":    "id\n",
		"agent/charts/funnel.js":    "export function render() {}\n",
		"agent/charts/funnel.json":  "{\n  \"name\": \"Funnel\", \"description\": \"Funnel with drop-off\"\n}\n",
		"nao_config.yaml":           "databases:\n  - name: app-pg\n    type: postgres\n  - name: lake\n    type: bigquery\n",
		"agent/tools/write.md":      "---\ntitle: Files\n---\n- Save under /out only.\n",
		"agent/tools/send_email.md": "---\ntitle: E-mail\n---\n- Never e-mail outside the company.\n",
		"loom.yaml":                 "mcp_servers:\n  - name: linear\n    description: Issue tracker\n  - name: github\n",
	})
	none := render(t, dir, prompt.Options{Tools: []string{}})
	for _, h := range []string{"## Saved Files", "## Files", "## Chart Rules", "## MCP Servers", "## Built-in Skills"} {
		if strings.Contains(none.Prompt, h) {
			t.Errorf("%s present with an empty tool list", h)
		}
	}
	res := render(t, dir, prompt.Options{Tools: []string{"execute_sql", "write", "display_chart", "load_skill", "mcp_call", "send_email", "teleport"}})
	p := res.Prompt
	for _, want := range []string{
		"## Files\n\n- Save under /out only.",
		"## The Local Database\n\n",
		"## Chart Rules\n\n",
		"## Custom Charts\n\n", "- **funnel**: Funnel with drop-off",
		"## Databases\n\n", "- **app-pg** — type=postgres\n- **lake** — type=bigquery",
		"## Built-in Skills\n\n", "**plan-task** — ",
		"## MCP Servers\n\n", "- **linear** — Issue tracker\n- **github**",
		"## E-mail\n\n- Never e-mail outside the company.",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Contains(p, "## Saved Files") {
		t.Error("agent/tools/write.md did not replace the built-in rules")
	}
	if !hasDiag(res, "", `"teleport" has no rules`) {
		t.Errorf("no diagnostic for a tool without rules: %v", res.Report.Diagnostics)
	}
	if i, j := strings.Index(p, "## Tool Calls"), strings.Index(p, "## The Local Database"); i < 0 || j < i {
		t.Error("tool sections must follow Tool Calls")
	}
	// The assistant preset gets them too, from loom.yaml's tools.
	dir2 := write(t, map[string]string{"AGENTS.md": "Hi.\n", "loom.yaml": "tools: [write]\n"})
	if got := render(t, dir2, prompt.Options{}).Prompt; !strings.Contains(got, "# Saved Files\n\n") {
		t.Errorf("assistant: no Saved Files section:\n%s", got)
	}
	// Each built-in rule is for a tool the package documents.
	want := []string{"display_chart", "display_map", "execute_sql", "load_skill", "mcp_call", "write"}
	if got := toolrules.Builtins(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("built-in rules for %v, documented %v", got, want)
	}
}
