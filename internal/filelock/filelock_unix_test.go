//go:build unix

package filelock_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/filelock"
)

func TestSymlinkAndFIFOAreRefused(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep me"), 0o644)
	link := filepath.Join(dir, "x.lock")
	if err := os.Symlink(victim, link); err != nil {
		t.Skip(err)
	}
	if l, err := filelock.Acquire(context.Background(), link, 100*time.Millisecond); err == nil {
		l.Release()
		t.Fatal("a symlinked lock file was followed")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("the symlink's target was changed: %q", b)
	}
	fifo := filepath.Join(dir, "f.lock")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		l, err := filelock.Acquire(context.Background(), fifo, 100*time.Millisecond)
		if err == nil {
			l.Release()
		}
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a named pipe in place of the lock file hung the lock")
	}
}
