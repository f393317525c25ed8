package config

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/loomctx/loom/workspace"
)

// EnvMemoryDB names the environment variable through which the operator
// puts the memory database anywhere, the workspace's outside included. The
// CLI's --memory-db flag sets it.
const EnvMemoryDB = "LOOM_MEMORY_DB"

// DefaultMemoryDB is where a workspace keeps its memory database when
// neither the operator nor loom.yaml says otherwise, relative to the root.
const DefaultMemoryDB = ".loom/memory.db"

// MemoryStoreLocation is the one answer to "where is this workspace's
// memory database": the absolute path of the file. In order:
//
//   - $LOOM_MEMORY_DB (or --memory-db), the operator's choice: any path,
//     a relative one taken from the current directory;
//   - loom.yaml's memory.db, which may only name a file inside the
//     workspace: no absolute path, no "..";
//   - .loom/memory.db.
//
// A workspace may come from someone else, so it never chooses a database
// outside itself; that choice is the operator's. cfg may be nil. Nothing
// is created here, but a path inside the workspace is checked on disk: no
// existing component of it, nor of SQLite's -wal, -shm and -journal files
// beside it, may be a symlink (a symlinked .loom/ would take the database
// elsewhere), so the caller can hand the path to SQLite.
func MemoryStoreLocation(root string, cfg *Config) (string, error) {
	if op := strings.TrimSpace(os.Getenv(EnvMemoryDB)); op != "" {
		abs, err := filepath.Abs(op)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %v", EnvMemoryDB, op, err)
		}
		return abs, nil
	}
	if root == "" {
		return "", fmt.Errorf("the workspace has no folder on disk for a memory database; set %s", EnvMemoryDB)
	}
	rel := DefaultMemoryDB
	if cfg != nil && cfg.Memory.DB != "" {
		if msg := insideWorkspace(cfg.Memory.DB); msg != "" {
			file := cfg.File
			if file == "" {
				file = FileName
			}
			return "", &Error{File: file, Line: cfg.Line("memory.db"), Msg: "memory.db: " + msg}
		}
		rel = path.Clean(cfg.Memory.DB)
	}
	if _, err := workspace.LocalPaths(root, rel, "", "-wal", "-shm", "-journal"); err != nil {
		return "", fmt.Errorf("memory database: %w", err)
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// insideWorkspace says what is wrong with p as a loom.yaml path that must
// stay inside the workspace, or "" when nothing is.
func insideWorkspace(p string) string {
	const outside = "; a database outside the workspace is chosen by the operator with --memory-db or " + EnvMemoryDB
	switch c := path.Clean(p); {
	case strings.TrimSpace(p) == "":
		return "must not be empty"
	case path.IsAbs(p) || filepath.IsAbs(p):
		return fmt.Sprintf("%q is an absolute path; name a file inside the workspace%s", p, outside)
	case strings.Contains(p, `\`) || (len(p) > 1 && p[1] == ':'):
		return fmt.Sprintf("%q is a Windows path; use a path relative to the workspace with /", p)
	case c == ".." || strings.HasPrefix(c, "../"):
		return fmt.Sprintf("%q climbs out of the workspace%s", p, outside)
	case c == ".":
		return fmt.Sprintf("%q names the workspace folder, not a file", p)
	case strings.ContainsRune(p, 0):
		return "contains a NUL byte"
	}
	return ""
}
