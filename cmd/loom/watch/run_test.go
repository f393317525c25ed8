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
	"github.com/loomctx/loom/memory"
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
	out, errOut, stop := startWatch(t, dir, nil)
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
	stop()
}

// loom watch re-renders on an edit anywhere the prompt reads from, not only
// skills and the root: agent/prompts/, agent/dialects/, databases/, memory/.
func TestWatchRerendersOnEveryKind(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"loom.yaml":                  "preset: analyst\n",
		"RULES.md":                   "- Be careful.\n",
		"agent/prompts/slack.md":     "{{ default_prompt }}\n\nSlack note.\n",
		"agent/dialects/postgres.md": "## SQL\n\n- Quote identifiers.\n",
		"memory/MEMORY.md":           "- Fact one.\n",
	}
	for rel, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(text), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "databases", "type=postgres", "database=shop"), 0o755)
	out, errOut, stop := startWatch(t, dir, func(o *Options) { o.Flags.Channel = "slack" })
	for _, e := range []struct{ rel, text, want string }{
		{"agent/prompts/slack.md", "{{ default_prompt }}\n\nSlack marker 91a.\n", "Slack marker 91a."},
		{"agent/dialects/postgres.md", "## SQL\n\n- Dialect marker 91b.\n", "Dialect marker 91b."},
		{"memory/MEMORY.md", "- Memory marker 91c.\n", "Memory marker 91c."},
		{"RULES.md", "- Rules marker 91d.\n", "Rules marker 91d."},
		{"databases/type=postgres/database=wh91e/", "", "wh91e"},
	} {
		p := filepath.Join(dir, filepath.FromSlash(e.rel))
		if strings.HasSuffix(e.rel, "/") {
			os.MkdirAll(p, 0o755)
		} else {
			os.WriteFile(p, []byte(e.text), 0o644)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), e.want) {
			if time.Now().After(deadline) {
				t.Fatalf("no re-render after editing %s:\nstderr: %s", e.rel, errOut)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stop()
}

// Another process reading the memory database moves SQLite's side files
// without changing a memory: no render is printed for it. A memory it
// writes is.
func TestWatchIgnoresReadsOfTheMemoryDatabase(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Be terse.\n"), 0o644)
	remember := func(content string) {
		t.Helper()
		store, err := memory.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		if content == "" {
			if _, err := store.List(context.Background(), memory.Query{}); err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := store.Add(context.Background(), memory.NewMemory{Category: "global_rule", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	remember("Answer in metric units.")
	out, errOut, stop := startWatch(t, dir, nil)
	if !strings.Contains(out.String(), "Answer in metric units.") {
		t.Fatalf("first render has no memory:\n%s", out)
	}
	for range 5 {
		remember("") // a read
		time.Sleep(60 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(errOut.String(), "changed:") {
		t.Fatalf("reads were reported as changes:\n%s", errOut)
	}
	remember("Quote every figure with its unit.")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "Quote every figure with its unit.") {
		if time.Now().After(deadline) {
			t.Fatalf("no re-render after a memory was written:\nstderr: %s", errOut)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
}

// startWatch runs the watch on dir (with set's changes to its options,
// when set is not nil) until its first render is out. stop ends it and
// fails the test if it ended with an error.
func startWatch(t *testing.T, dir string, set func(*Options)) (out, errOut *syncBuffer, stop func()) {
	t.Helper()
	out, errOut = &syncBuffer{}, &syncBuffer{}
	opts := &Options{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, Debounce: 20 * time.Millisecond}
	opts.Flags.Dir = dir
	if set != nil {
		set(opts)
	}
	ready := make(chan struct{})
	opts.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // a test that fails early still ends the watch
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("watch ended early: %v\n%s", err, errOut)
	case <-time.After(10 * time.Second):
		t.Fatal("watch never became ready")
	}
	return out, errOut, func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
