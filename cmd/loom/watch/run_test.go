package watch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

// syncBuffer lets the test read what the watcher writes from its goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWatchRerendersOnChange(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Be terse.\n"), 0o644)
	out, errOut := &syncBuffer{}, &syncBuffer{}
	opts := &Options{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, Debounce: 20 * time.Millisecond}
	opts.Flags.Dir = dir
	ready := make(chan struct{})
	opts.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("watch ended early: %v\n%s", err, errOut)
	case <-time.After(10 * time.Second):
		t.Fatal("watch never became ready")
	}
	if !strings.Contains(out.String(), "Be terse.") {
		t.Fatalf("first render missing: %q", out)
	}
	os.MkdirAll(filepath.Join(dir, "skills", "notes"), 0o755)
	os.WriteFile(filepath.Join(dir, "skills", "notes", "SKILL.md"), []byte("---\nname: notes\ndescription: Take notes carefully\n---\nbody\n"), 0o644)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "Take notes carefully") {
		if time.Now().After(deadline) {
			t.Fatalf("no re-render after a new skill:\n%s\nstderr: %s", out, errOut)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
