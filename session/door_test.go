package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/workspace"
)

func userMsg(s string) messages.Message {
	return messages.Message{Role: "user", Content: messages.TextContent(s)}
}

// Class: perms. Session files are private data: .loom/ and
// .loom/sessions/ 0700, each session 0600, whatever the umask; a rewrite
// (moving the pointer, trimming) keeps them so.
func TestSessionFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	root := t.TempDir()
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewWorkspaceFileStore(ws, session.FileOptions{})
	ctx := context.Background()
	if err := st.Append(ctx, "cli:ana", userMsg("one"), userMsg("two")); err != nil {
		t.Fatal(err)
	}
	if err := st.MoveConsolidated(ctx, "cli:ana", 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Trim(ctx, "cli:ana", 1); err != nil {
		t.Fatal(err)
	}
	got, err := st.Load(ctx, "cli:ana")
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("load = %+v, %v", got, err)
	}
	for rel, want := range map[string]os.FileMode{".loom": 0o700, ".loom/sessions": 0o700, ".loom/sessions/cli_ana.jsonl": 0o600} {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", rel, fi.Mode().Perm(), want)
		}
	}
}

// Class: paths. A symlinked .loom/, sessions folder, session file or lock
// file cannot take a session's turns outside the workspace.
func TestSessionFilesRefuseSymlinks(t *testing.T) {
	ctx := context.Background()
	for name, setup := range map[string]func(root, outside string){
		".loom": func(root, outside string) { os.Symlink(outside, filepath.Join(root, ".loom")) },
		"sessions": func(root, outside string) {
			os.Mkdir(filepath.Join(root, ".loom"), 0o700)
			os.Symlink(outside, filepath.Join(root, ".loom", "sessions"))
		},
		"session file": func(root, outside string) {
			os.MkdirAll(filepath.Join(root, ".loom", "sessions"), 0o700)
			os.Symlink(filepath.Join(outside, "victim"), filepath.Join(root, ".loom", "sessions", "cli_ana.jsonl"))
		},
		"lock file": func(root, outside string) {
			os.MkdirAll(filepath.Join(root, ".loom", "sessions"), 0o700)
			os.Symlink(filepath.Join(outside, "victim"), filepath.Join(root, ".loom", "sessions", "cli_ana.jsonl.lock"))
		},
	} {
		root, outside := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(outside, "victim"), []byte("keep\n"), 0o644)
		setup(root, outside)
		ws, err := workspace.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		st := session.NewWorkspaceFileStore(ws, session.FileOptions{})
		err = st.Append(ctx, "cli:ana", userMsg("secret turn"))
		if !errors.Is(err, workspace.ErrSymlink) {
			t.Errorf("%s: Append = %v, want a symlink refusal", name, err)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "keep\n" {
			t.Errorf("%s: the outside file changed: %q", name, b)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 1 {
			t.Errorf("%s: files appeared outside: %v", name, ents)
		}
	}
}

// A store makes its folder once, not on every save; a folder removed or
// swapped for a symlink while the store is open is made again through the
// door, or refused, as on the first save.
func TestSessionFolderGoneAfterFirstSave(t *testing.T) {
	ctx := context.Background()
	root, outside := t.TempDir(), t.TempDir()
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewWorkspaceFileStore(ws, session.FileOptions{})
	if err := st.Append(ctx, "cli:ana", userMsg("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, ".loom")); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, "cli:ana", userMsg("two")); err != nil {
		t.Fatalf("append after the folder went: %v", err)
	}
	got, err := st.Load(ctx, "cli:ana")
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.Text != "two" {
		t.Fatalf("load = %+v, %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(root, ".loom", "sessions")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("sessions folder made again: %v, %v", fi, err)
	}
	os.RemoveAll(filepath.Join(root, ".loom", "sessions"))
	os.Symlink(outside, filepath.Join(root, ".loom", "sessions"))
	if err := st.Append(ctx, "cli:ana", userMsg("three")); !errors.Is(err, workspace.ErrSymlink) {
		t.Errorf("append with the folder swapped for a symlink = %v, want a symlink refusal", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("files appeared outside: %v", ents)
	}
}
