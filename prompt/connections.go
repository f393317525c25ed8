package prompt

import (
	"strings"

	"github.com/loomctx/loom/workspace"
)

// Connection is one database the project is connected to, as named by its
// folder under databases/.
type Connection struct {
	Type     string `json:"type"`
	Database string `json:"database"`
}

// Connections reads databases/type=<t>/database=<d>/ as nao does: the
// prefixes are case-sensitive, an empty value is skipped, files are ignored,
// and everything after the first "=" is the value. The result is sorted by
// type, then database, so the prompt does not depend on the file system's
// order.
func Connections(ws *workspace.Workspace, diags *workspace.Diagnostics) []Connection {
	types, err := ws.ReadDir("databases")
	if err != nil {
		return nil
	}
	var out []Connection
	for _, t := range types {
		typ, ok := strings.CutPrefix(t.Name(), "type=")
		if !ok || typ == "" || !isDir(ws, "databases/"+t.Name(), t.IsDir()) {
			continue
		}
		dbs, err := ws.ReadDir("databases/" + t.Name())
		if err != nil {
			diags.Add(workspace.Warning, "databases/"+t.Name(), 0, workspace.RefusalCode(err), "%s", workspace.RefusalMessage(err))
			continue
		}
		for _, d := range dbs {
			db, ok := strings.CutPrefix(d.Name(), "database=")
			if !ok || db == "" || !isDir(ws, "databases/"+t.Name()+"/"+d.Name(), d.IsDir()) {
				continue
			}
			out = append(out, Connection{Type: typ, Database: db})
		}
	}
	return out
}

// isDir follows a symlinked folder only when it stays inside the workspace.
func isDir(ws *workspace.Workspace, rel string, dir bool) bool {
	return dir || ws.IsDir(rel)
}
