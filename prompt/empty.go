package prompt

import (
	"strings"

	"github.com/loomctx/loom/workspace"
)

// workspaceMarks are the files and folders that make a folder a
// workspace: loom's, nanobot's and nao's. A folder with none of them
// renders loom's defaults alone, which usually means the wrong folder.
var workspaceMarks = []string{
	"loom.yaml", "AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "RULES.md", "memory/MEMORY.md",
	"nao_config.yaml", "skills", "agent", "databases", "semantics",
}

// checkNotEmpty adds a warning when the workspace has none of
// workspaceMarks.
func (st *state) checkNotEmpty() {
	for _, m := range workspaceMarks {
		if st.ws.Exists(m) {
			return
		}
	}
	where := st.ws.Root()
	if where == "" {
		where = "the workspace"
	}
	st.diags.Add(workspace.Warning, "", 0, "workspace.empty",
		"no workspace files in %s (none of %s): the prompt is loom's defaults alone; is this the right folder? `loom init` writes a starter workspace",
		where, strings.Join(workspaceMarks, ", "))
}
