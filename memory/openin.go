package memory

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/loomctx/loom/workspace"
)

// OpenIn opens the SQLite memory database at dbPath (absolute, as
// config.MemoryStoreLocation gives it) for the workspace ws. Every front
// end opens its database this way.
//
// Inside the workspace folder, the folders on the way are made through the
// door ([workspace.Workspace.MkdirAll]: 0700, no symlink followed, so none
// is ever created outside), and the path and SQLite's -wal, -shm and
// -journal files beside it are checked again for symlinks just before
// SQLite opens it. A location outside the folder is the operator's choice
// (--memory-db, LOOM_MEMORY_DB): its folders are made as given.
//
// With create false and no database yet, OpenIn creates nothing and
// returns nil, nil.
func OpenIn(ws *workspace.Workspace, dbPath string, create bool, opts ...Option) (*SQLite, error) {
	if rel, ok := relInside(ws.Root(), dbPath); ok {
		if create {
			if dir := path.Dir(rel); dir != "." {
				if err := ws.MkdirAll(dir, 0o700); err != nil {
					return nil, err
				}
			}
		}
		for _, suffix := range []string{"-wal", "-shm", "-journal", ""} {
			p, err := ws.LocalPath(rel + suffix)
			if err != nil {
				return nil, err
			}
			dbPath = p
		}
	} else if create {
		if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
			return nil, &DBError{Path: dbPath, Err: err}
		}
	}
	if !create {
		if _, err := os.Lstat(dbPath); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	return OpenSQLite(dbPath, opts...)
}

// relInside is p relative to root, slash-separated, when p is inside root.
func relInside(root, p string) (string, bool) {
	if root == "" {
		return "", false
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || filepath.IsAbs(rel) || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
