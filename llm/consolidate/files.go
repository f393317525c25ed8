package consolidate

import (
	"errors"
	"io/fs"

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
}

// WorkspaceFiles are memory/MEMORY.md and memory/HISTORY.md of a workspace
// folder, read through the workspace door and written by the memory
// package (temp file and rename; one O_APPEND write).
type WorkspaceFiles struct {
	WS *workspace.Workspace
}

// ReadMemory implements Files.
func (f WorkspaceFiles) ReadMemory() (string, error) {
	file, err := f.WS.Load(memory.MemoryFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return file.Text, nil
}

// WriteMemory implements Files.
func (f WorkspaceFiles) WriteMemory(text string) error {
	return memory.WriteMemoryFile(f.WS.Root(), text)
}

// AppendHistory implements Files.
func (f WorkspaceFiles) AppendHistory(entry string) error {
	return memory.AppendHistory(f.WS.Root(), entry)
}
