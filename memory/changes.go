package memory

import (
	"fmt"
	"os"
	"slices"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/workspace"
)

// DatabaseOf is the path of a workspace's SQLite memory database, or ""
// when loom.yaml cannot be read or names no database on disk.
func DatabaseOf(ws *workspace.Workspace) string {
	cfg, err := config.Load(ws)
	if err != nil {
		return ""
	}
	p, err := config.MemoryStoreLocation(ws.Root(), cfg)
	if err != nil {
		return ""
	}
	return p
}

// Stamp changes when the SQLite database at db may hold other contents:
// it is the size and modification time of the database and of its
// write-ahead log while the log holds anything. A read changes neither
// (SQLite creates an empty log and a -shm file when a connection opens,
// removes them when the last one closes, and gives the log the database's
// permissions again on every open), while every committed write grows or
// rewrites the log, and a checkpoint rewrites the database.
func Stamp(db string) string {
	if db == "" {
		return ""
	}
	stamp := func(path string) string {
		fi, err := os.Stat(path)
		if err != nil || fi.Size() == 0 {
			return "-;"
		}
		return fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return stamp(db) + stamp(db+"-wal")
}

// ReadFilter tells a workspace change that is only SQLite's side files
// moving under a read of the memory database from a real change. A
// watcher that re-renders on every change would otherwise react to its
// own render's read: the inspector's page refreshed about 16 times a
// second, for as long as it was open.
type ReadFilter struct {
	ws    *workspace.Workspace
	stamp string // Stamp when the last change was let through
}

// NewReadFilter starts a filter for ws from the database as it is now.
func NewReadFilter(ws *workspace.Workspace) *ReadFilter {
	return &ReadFilter{ws: ws, stamp: Stamp(DatabaseOf(ws))}
}

// OnlyRead reports whether a change of paths touched nothing but the
// memory database's files, with its contents as they were at the last
// change let through.
func (f *ReadFilter) OnlyRead(paths []string) bool {
	db := DatabaseOf(f.ws)
	stamp := Stamp(db)
	defer func() { f.stamp = stamp }()
	if db == "" || stamp != f.stamp {
		return false
	}
	for _, p := range paths {
		if !slices.ContainsFunc(config.SQLiteFiles, func(suffix string) bool { return p == db+suffix }) {
			return false
		}
	}
	return true
}
