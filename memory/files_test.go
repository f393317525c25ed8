package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/loomctx/loom/workspace"
)

func TestMemoryFile(t *testing.T) {
	root := t.TempDir()
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	var diags workspace.Diagnostics
	if text, ok := ReadMemoryFile(ws, &diags); ok || text != "" || len(diags) != 0 {
		t.Errorf("missing MEMORY.md = %q, %v, %v; want quiet absence", text, ok, diags)
	}
	want := "# Long-term Memory\n\n- The user is Alex.\n"
	if err := WriteMemoryFile(ws, want); err != nil {
		t.Fatal(err)
	}
	if text, ok := ReadMemoryFile(ws, &diags); !ok || text != want {
		t.Errorf("MEMORY.md = %q, %v; want %q", text, ok, want)
	}
	if err := WriteMemoryFile(ws, "# Long-term Memory\r\n\r\n- Now CRLF.\r\n"); err != nil {
		t.Fatal(err)
	}
	if text, _ := ReadMemoryFile(ws, &diags); text != "# Long-term Memory\n\n- Now CRLF.\n" {
		t.Errorf("rewritten MEMORY.md read back as %q", text)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "memory"))
	if len(entries) != 1 {
		t.Errorf("memory/ holds %d entries, want MEMORY.md alone", len(entries))
	}

	// A MEMORY.md that escapes the workspace is refused with a diagnostic.
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("secret"), 0o644)
	os.Remove(filepath.Join(root, "memory", "MEMORY.md"))
	if err := os.Symlink(outside, filepath.Join(root, "memory", "MEMORY.md")); err != nil {
		t.Skip("no symlinks:", err)
	}
	diags = nil
	if text, ok := ReadMemoryFile(ws, &diags); ok || text != "" || len(diags) != 1 || diags[0].Path != MemoryFile {
		t.Errorf("escaping MEMORY.md = %q, %v, %v", text, ok, diags)
	}
}

func TestAppendHistoryConcurrent(t *testing.T) {
	root := t.TempDir()
	ws := openWorkspace(t, root)
	const writers, each = 8, 1000
	entry := func(w, i int) string {
		// Entries of varied length, some past a pipe buffer, some non-ASCII.
		return fmt.Sprintf("[2026-03-01 10:%02d] writer %d entry %d: %s", i%60, w, i, strings.Repeat("é"+strings.Repeat("x", w), 1+(i*7)%700))
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := AppendHistory(ws, entry(w, i)+"\n  \n"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(filepath.Join(root, "memory", "HISTORY.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.HasSuffix(text, "\n\n") {
		t.Fatalf("HISTORY.md does not end with a blank line")
	}
	got := strings.Split(strings.TrimSuffix(text, "\n\n"), "\n\n")
	if len(got) != writers*each {
		t.Fatalf("%d entries, want %d", len(got), writers*each)
	}
	seen := make(map[string]bool, len(got))
	for _, e := range got {
		var w, i int
		at := strings.Index(e, "writer")
		if at < 0 {
			t.Fatalf("torn entry: %.80q", e)
		}
		if _, err := fmt.Sscanf(e[at:], "writer %d entry %d:", &w, &i); err != nil || e != entry(w, i) {
			t.Fatalf("torn entry: %.80q", e)
		}
		seen[e] = true
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct entries, want %d", len(seen), writers*each)
	}
	if err := AppendHistory(ws, " \n\t"); err != nil || len(mustRead(t, filepath.Join(root, "memory", "HISTORY.md"))) != len(data) {
		t.Errorf("an empty entry changed the file")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// MEMORY.md and HISTORY.md are private data: 0600 in a 0700 folder, even
// under a permissive umask.
func TestMemoryFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	root := t.TempDir()
	ws := openWorkspace(t, root)
	if err := WriteMemoryFile(ws, "# Memory\n"); err != nil {
		t.Fatal(err)
	}
	if err := AppendHistory(ws, "[2026-03-01] something"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"memory": 0o700, MemoryFile: 0o600, HistoryFile: 0o600} {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s is %o, want %o", name, st.Mode().Perm(), want)
		}
	}
}

func openWorkspace(t *testing.T, root string) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// The memory files are written through the door: a symlinked memory/
// folder, MEMORY.md or HISTORY.md is refused, and nothing outside changes.
func TestMemoryFilesRefuseSymlinks(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.md")
	os.WriteFile(victim, []byte("keep\n"), 0o644)

	root := t.TempDir()
	ws := openWorkspace(t, root)
	os.Symlink(outside, filepath.Join(root, "memory"))
	if err := WriteMemoryFile(ws, "x\n"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("WriteMemoryFile through a symlinked memory/ = %v", err)
	}
	if err := AppendHistory(ws, "x"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("AppendHistory through a symlinked memory/ = %v", err)
	}

	root2 := t.TempDir()
	ws2 := openWorkspace(t, root2)
	os.Mkdir(filepath.Join(root2, "memory"), 0o700)
	os.Symlink(victim, filepath.Join(root2, "memory", "MEMORY.md"))
	os.Symlink(victim, filepath.Join(root2, "memory", "HISTORY.md"))
	if err := WriteMemoryFile(ws2, "x\n"); !errors.Is(err, workspace.ErrSymlink) {
		t.Errorf("WriteMemoryFile over a symlink = %v", err)
	}
	if err := AppendHistory(ws2, "x"); !errors.Is(err, workspace.ErrSymlink) {
		t.Errorf("AppendHistory over a symlink = %v", err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep\n" {
		t.Errorf("outside file changed: %q", got)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside folder gained files: %v", ents)
	}
}
