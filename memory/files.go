package memory

import (
	"path"
	"strings"

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

// WriteMemoryFile replaces memory/MEMORY.md in ws with text, atomically
// and through the door: a reader sees the old file or the new one, never a
// part; no symlink is followed; the memory folder is created 0700 and the
// file 0600 if needed; text over the workspace's max_file_size is refused.
func WriteMemoryFile(ws *workspace.Workspace, text string) error {
	if err := ws.MkdirAll(path.Dir(MemoryFile), 0o700); err != nil {
		return err
	}
	return ws.WriteFile(MemoryFile, []byte(text), 0o600)
}

// AppendHistory adds entry to memory/HISTORY.md in ws, through the door.
// The entry loses trailing white space and gains a blank line, and goes to
// the file in one O_APPEND|O_NOFOLLOW write, so concurrent writers never
// interleave. An empty entry is not written.
func AppendHistory(ws *workspace.Workspace, entry string) error {
	entry = strings.TrimRight(entry, " \t\r\n")
	if entry == "" {
		return nil
	}
	if err := ws.MkdirAll(path.Dir(HistoryFile), 0o700); err != nil {
		return err
	}
	return ws.AppendFile(HistoryFile, []byte(entry+"\n\n"), 0o600)
}
