package memory

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/loomctx/loom/workspace"
)

// SelectStored is what a render does with the memory database at dbPath:
// if it exists, list the active memories of q's scope and choose within
// budget (opts.ExcludeChat, not q.ExcludeChat, leaves a chat out); if it does not, return an empty selection without
// creating anything. A database that cannot be used gives a *[DBError];
// the caller renders the rest of the prompt and reports it with
// [DBError.Diagnostic].
func SelectStored(ctx context.Context, dbPath string, q Query, cats []Category, budget int, counter Counter, opts SelectOptions) (Selection, error) {
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		return Selection{Budget: max(budget, 0)}, nil
	}
	s, err := OpenSQLite(dbPath, WithCategories(cats))
	if err != nil {
		return Selection{Budget: max(budget, 0)}, err
	}
	defer s.Close()
	// The current chat's memories are listed and left out by Select, so
	// the report names them too.
	q.All, q.ExcludeChat = false, ""
	ms, err := s.List(ctx, q)
	if err != nil {
		return Selection{Budget: max(budget, 0)}, err
	}
	sel := Select(ms, cats, budget, counter, opts)
	return sel, nil
}

// Diagnostic turns the error into a diagnostic for the render report:
// the memories are left out, the rest of the prompt goes on. root is the
// workspace folder, so the path can be given relative to it.
func (e *DBError) Diagnostic(root string) workspace.Diagnostic {
	path := e.Path
	if rel, err := filepath.Rel(root, e.Path); err == nil && filepath.IsLocal(rel) {
		path = filepath.ToSlash(rel)
	}
	return workspace.Diagnostic{
		Path:     path,
		Severity: workspace.Error,
		Code:     "memory.db",
		Message:  "memories left out: " + e.Err.Error(),
	}
}
