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
	if op, err := operatorMemoryDB(); op != "" || err != nil {
		return op, err
	}
	if root == "" {
		return "", fmt.Errorf("the workspace has no folder on disk for a memory database; set %s", EnvMemoryDB)
	}
	rel, err := memoryDBRel(cfg)
	if err != nil {
		return "", err
	}
	if _, err := workspace.LocalPaths(root, rel, SQLiteFiles...); err != nil {
		return "", fmt.Errorf("memory database: %w", err)
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// SQLiteFiles are the suffixes of the files SQLite keeps for a database:
// none for the database itself, then its write-ahead log, its shared
// memory and its rollback journal.
var SQLiteFiles = []string{"", "-wal", "-shm", "-journal"}

// MemoryStoreFiles is MemoryStoreLocation through the workspace's door,
// for a caller that only needs to know whether the database changed: with
// the path, the identity of each of its files (in SQLiteFiles order, the
// zero FileID for one missing), given from memory while the door's watch
// vouches for them. For the operator's database, which is not the
// workspace's, ids is nil and the caller checks the file itself.
func MemoryStoreFiles(ws *workspace.Workspace, cfg *Config) (path string, ids []workspace.FileID, err error) {
	if op, err := operatorMemoryDB(); op != "" || err != nil {
		return op, nil, err
	}
	root := ws.Root()
	if root == "" {
		return "", nil, fmt.Errorf("the workspace has no folder on disk for a memory database; set %s", EnvMemoryDB)
	}
	rel, err := memoryDBRel(cfg)
	if err != nil {
		return "", nil, err
	}
	ids, err = ws.LocalIDs(rel, SQLiteFiles...)
	if err != nil {
		return "", nil, fmt.Errorf("memory database: %w", err)
	}
	return filepath.Join(root, filepath.FromSlash(rel)), ids, nil
}

// operatorMemoryDB is the absolute path of the operator's database, or ""
// when the operator chose none.
func operatorMemoryDB() (string, error) {
	op := strings.TrimSpace(os.Getenv(EnvMemoryDB))
	if op == "" {
		return "", nil
	}
	abs, err := filepath.Abs(op)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %v", EnvMemoryDB, op, err)
	}
	return abs, nil
}

// memoryDBRel is the workspace's own choice of database, relative to its
// root: loom.yaml's memory.db, checked, else DefaultMemoryDB.
func memoryDBRel(cfg *Config) (string, error) {
	if cfg == nil || cfg.Memory.DB == "" {
		return DefaultMemoryDB, nil
	}
	if msg := insideWorkspace(cfg.Memory.DB); msg != "" {
		file := cfg.File
		if file == "" {
			file = FileName
		}
		return "", &Error{File: file, Line: cfg.Line("memory.db"), Msg: "memory.db: " + msg}
	}
	return path.Clean(cfg.Memory.DB), nil
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
