package prompt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// fakeSource is a memory source whose version moves on every write, as a
// shared store's does when a change notice arrives.
type fakeSource struct {
	mu      sync.Mutex
	list    []memory.Memory
	version uint64
	known   bool // Version's ok
	lists   int
	err     error
}

func (f *fakeSource) List(_ context.Context, q memory.Query) ([]memory.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.err != nil {
		return nil, f.err
	}
	var out []memory.Memory
	for _, m := range f.list {
		if m.User == "" || m.User == q.User {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeSource) Version() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, f.known
}

func (f *fakeSource) add(content string, bump bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, memory.Memory{ID: fmt.Sprintf("m%d", len(f.list)), Category: "personal_fact",
		Content: content, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if bump {
		f.version++
	}
}

func watchedBuilder(t *testing.T) *prompt.Builder {
	t.Helper()
	ws, err := workspace.Open(write(t, map[string]string{"AGENTS.md": "# Agent\nHelp.\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Watch(); err != nil {
		t.Skip("no watcher here:", err)
	}
	b := prompt.New(ws)
	t.Cleanup(func() { b.Close(); ws.Close() })
	return b
}

// watchedBuilderAt opens the workspace at dir with a watch, and a builder
// on it, both closed when the test ends.
func watchedBuilderAt(t *testing.T, dir string) (*workspace.Workspace, *prompt.Builder) {
	t.Helper()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	b := prompt.New(ws)
	t.Cleanup(func() { b.Close() })
	return ws, b
}

func has(t *testing.T, b *prompt.Builder, text string) bool {
	t.Helper()
	res, err := b.Render(context.Background(), prompt.Options{User: "ann", GOOS: "linux", GOARCH: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(res.Prompt, text)
}

// A source's version decides reuse: a change it announces is in the next
// render even on a watched workspace whose files did not change, and an
// unannounced change waits for Invalidate.
func TestMemorySourceVersionAndInvalidate(t *testing.T) {
	b := watchedBuilder(t)
	src := &fakeSource{known: true}
	b.SetMemorySource(src)
	if has(t, b, "oolong") {
		t.Fatal("memory before it was written")
	}
	src.add("Ann drinks oolong.", true)
	if !has(t, b, "oolong") {
		t.Fatal("a change the version announced is not in the next render")
	}
	n := src.lists
	if !has(t, b, "oolong") || src.lists != n {
		t.Fatalf("an unchanged version listed again (%d lists, was %d)", src.lists, n)
	}
	src.add("Ann keeps bees.", false)
	if has(t, b, "bees") {
		t.Fatal("an unannounced change showed up: the test no longer tests reuse")
	}
	b.Invalidate()
	if !has(t, b, "bees") {
		t.Fatal("Invalidate did not make the next render list again")
	}
}

// A source that cannot tell whether it changed is listed on every render;
// one out of reach fails the render with memory.ErrUnavailable.
func TestMemorySourceUnknownAndUnavailable(t *testing.T) {
	b := watchedBuilder(t)
	src := &fakeSource{known: false}
	b.SetMemorySource(src)
	has(t, b, "x")
	src.add("Ann keeps bees.", false)
	if !has(t, b, "bees") {
		t.Fatal("a source without a version was not listed again")
	}
	src.mu.Lock()
	src.err = fmt.Errorf("connect: %w", memory.ErrUnavailable)
	src.mu.Unlock()
	_, err := b.Render(context.Background(), prompt.Options{User: "ann", GOOS: "linux", GOARCH: "amd64"})
	if !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("render with the source out of reach: %v", err)
	}
}

// Invalidate also covers the SQLite database: a write through another
// handle is in the next render of a watched builder that already
// rendered, whatever the database files' times say.
func TestInvalidateWithDatabase(t *testing.T) {
	b := watchedBuilder(t)
	dbPath := filepath.Join(b.Workspace().Root(), ".loom", "memory.db")
	t.Setenv("LOOM_MEMORY_DB", dbPath)
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := memory.OpenSQLite(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if has(t, b, "oolong") {
		t.Fatal("memory before it was written")
	}
	if _, err := st.Add(context.Background(), memory.NewMemory{Category: "personal_fact", Content: "Ann drinks oolong.", User: "ann"}); err != nil {
		t.Fatal(err)
	}
	b.Invalidate()
	if !has(t, b, "oolong") {
		t.Fatal("Invalidate did not make the next render read the database")
	}
}

// fileSource also keeps MEMORY.md per user, as sessions in PostgreSQL do.
type fileSource struct {
	fakeSource
	files map[string]string
}

func (f *fileSource) MemoryFile(_ context.Context, user string) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	text, ok := f.files[user]
	return text, ok, nil
}

// A source's MEMORY.md replaces the workspace's for its user, and a new
// version brings its change into the next render.
func TestMemorySourceMemoryFile(t *testing.T) {
	b := watchedBuilder(t)
	src := &fileSource{fakeSource: fakeSource{known: true}, files: map[string]string{"ann": "# Memory\n- Ann is on call on Fridays.\n"}}
	b.SetMemorySource(src)
	if !has(t, b, "on call on Fridays") {
		t.Fatal("the source's MEMORY.md is not in the prompt")
	}
	src.mu.Lock()
	src.files["ann"] = "# Memory\n- Ann moved to Lisbon.\n"
	src.version++
	src.mu.Unlock()
	if !has(t, b, "Lisbon") || has(t, b, "Fridays") {
		t.Fatal("the changed MEMORY.md is not in the next render")
	}
	res, err := b.Render(context.Background(), prompt.Options{User: "bob", GOOS: "linux", GOARCH: "amd64"})
	if err != nil || strings.Contains(res.Prompt, "Lisbon") {
		t.Fatalf("another user's MEMORY.md reached bob's prompt: %v", err)
	}
}

// freshSource reads its version per user at render time, as PostgreSQL's
// store does; its notice-driven Version never moves here.
type freshSource struct {
	fakeSource
	fresh map[string]uint64
	calls int
}

func (f *freshSource) FreshVersion(_ context.Context, user string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.fresh[user], f.err
}

// With a source that reads its version at render time, a change is in the
// next render though no notice moved Version, and an unchanged version is
// reused; the version's error fails the render.
func TestFreshMemorySource(t *testing.T) {
	b := watchedBuilder(t)
	src := &freshSource{fakeSource: fakeSource{known: true}, fresh: map[string]uint64{}}
	b.SetMemorySource(src)
	has(t, b, "x")
	src.add("Ann drinks oolong.", false)
	if has(t, b, "oolong") {
		t.Fatal("a change the version did not count showed up: the test no longer tests reuse")
	}
	src.mu.Lock()
	src.fresh["ann"]++
	src.mu.Unlock()
	if !has(t, b, "oolong") {
		t.Fatal("a change the fresh version counted is not in the next render")
	}
	src.mu.Lock()
	src.err = fmt.Errorf("dial: %w", memory.ErrUnavailable)
	src.mu.Unlock()
	if _, err := b.Render(context.Background(), prompt.Options{User: "ann", GOOS: "linux", GOARCH: "amd64"}); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("render with the version out of reach: %v", err)
	}
}
