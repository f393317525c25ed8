package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomctx/loom/internal/atomicfile"
	"github.com/loomctx/loom/workspace"
)

// The memory files, relative to the workspace folder.
const (
	// MemoryFile holds long-term facts; it enters every prompt.
	MemoryFile = "memory/MEMORY.md"
	// HistoryFile is an append-only log of past events. It never enters a
	// prompt; the agent searches it.
	HistoryFile = "memory/HISTORY.md"
)

// ReadMemoryFile returns the text of memory/MEMORY.md, read through the
// workspace's door. A missing file gives ok == false quietly; a refused one
// also adds a diagnostic to diags.
func ReadMemoryFile(ws *workspace.Workspace, diags *workspace.Diagnostics) (text string, ok bool) {
	f, ok := ws.Read(MemoryFile, diags)
	if !ok {
		return "", false
	}
	return f.Text, true
}

// WriteMemoryFile replaces memory/MEMORY.md under the workspace folder root
// with text, atomically: a reader sees the old file or the new one, never
// a part. The memory folder is created if needed.
func WriteMemoryFile(root, text string) error {
	path := filepath.Join(root, filepath.FromSlash(MemoryFile))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("%s: %w", MemoryFile, err)
	}
	return nil
}

// AppendHistory adds entry to memory/HISTORY.md under the workspace folder
// root. The entry loses trailing white space and gains a blank line, and
// goes to the file in one O_APPEND write, so concurrent writers never
// interleave. An empty entry is not written.
func AppendHistory(root, entry string) error {
	entry = strings.TrimRight(entry, " \t\r\n")
	if entry == "" {
		return nil
	}
	path := filepath.Join(root, filepath.FromSlash(HistoryFile))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := atomicfile.Append(path, []byte(entry+"\n\n"), 0o600); err != nil {
		return fmt.Errorf("%s: %w", HistoryFile, err)
	}
	return nil
}
