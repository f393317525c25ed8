package consolidate

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/loomctx/loom/internal/filelock"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/workspace"
)

// Files is what consolidation needs of the long-term memory file and the
// history log. The memory package provides both for a workspace folder;
// see WorkspaceFiles.
type Files interface {
	// ReadMemory returns the memory file's text, "" when there is none.
	ReadMemory() (string, error)
	// WriteMemory replaces the memory file atomically.
	WriteMemory(text string) error
	// AppendHistory adds one entry to the history log in a single append.
	AppendHistory(entry string) error
	// Lock holds both files against every other consolidation, in this
	// process and in others, until unlock is called. It waits up to wait;
	// a negative wait does not wait. A busy lock gives an error matching
	// filelock.ErrBusy that names the holder.
	Lock(ctx context.Context, wait time.Duration) (unlock func(), err error)
}

// LockFile is the lock of a workspace's memory files, relative to its
// folder.
const LockFile = ".loom/locks/memory.lock"

// WorkspaceFiles are memory/MEMORY.md and memory/HISTORY.md of a workspace
// folder, read through the workspace door and written by the memory
// package (temp file and rename; one O_APPEND write).
type WorkspaceFiles struct {
	WS *workspace.Workspace
}

// ReadMemory implements Files. It reads the disk, not the door's cache,
// since its result is about to be rewritten: a watched door may not have
// heard of another process's write yet.
func (f WorkspaceFiles) ReadMemory() (string, error) {
	data, err := f.WS.ReadFile(memory.MemoryFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	text, _ := workspace.Normalize(data)
	return text, nil
}

// WriteMemory implements Files.
func (f WorkspaceFiles) WriteMemory(text string) error {
	return memory.WriteMemoryFile(f.WS, text)
}

// AppendHistory implements Files.
func (f WorkspaceFiles) AppendHistory(entry string) error {
	return memory.AppendHistory(f.WS, entry)
}

// Lock implements Files with an OS lock on .loom/locks/memory.lock.
func (f WorkspaceFiles) Lock(ctx context.Context, wait time.Duration) (func(), error) {
	path := filepath.Join(f.WS.Root(), filepath.FromSlash(LockFile))
	var l *filelock.Lock
	var err error
	if wait < 0 {
		l, err = filelock.Try(path)
	} else {
		l, err = filelock.Acquire(ctx, path, wait)
	}
	if err != nil {
		return func() {}, err
	}
	return func() { l.Release() }, nil
}
