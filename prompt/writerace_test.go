package prompt_test

import (
	"context"
	"sync"
	"testing"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/workspace"
)

// writingSource is a memory source whose first List writes
// memory/MEMORY.md through the workspace's door: a render calls it after
// it has read MEMORY.md and before it ends, so the write lands where a
// consolidation's did when TestConsolidationThroughGateway failed cold.
type writingSource struct {
	ws   *workspace.Workspace
	once sync.Once
	err  error
}

func (s *writingSource) List(context.Context, memory.Query) ([]memory.Memory, error) {
	s.once.Do(func() {
		s.err = s.ws.WriteFile("memory/MEMORY.md", []byte("# Memory\n\nThe user's team is called MARKER-CONSOLIDATED.\n"), 0o644)
	})
	return nil, s.err
}

func (s *writingSource) Version() (uint64, bool) { return 1, true }

// A render that a write through the door overtook (its MEMORY.md read
// before the write, its result finished after it) is not reused: the next
// render, at once and on a watched workspace, has the new MEMORY.md. The
// write is deterministic: the builder's memory source makes it, from
// inside the render. The
// write moves the generation before the first render reads it, so only
// the door's write count (Workspace.Writes, checked by Render) can tell;
// without it the stale prompt was reused until something else changed.
func TestRenderOvertakenByAWriteIsNotReused(t *testing.T) {
	dir := write(t, map[string]string{"AGENTS.md": "# Agent\nHelp.\n", "memory/MEMORY.md": "# Memory\n\nThe user's team is called MARKER-BEFORE.\n"})
	ws, b := watchedBuilderAt(t, dir)
	src := &writingSource{ws: ws}
	b.SetMemorySource(src)
	if !has(t, b, "MARKER-BEFORE") {
		t.Fatal("the first render lacks the MEMORY.md it read before the write: the write did not overtake it")
	}
	if src.err != nil {
		t.Fatal(src.err)
	}
	if !has(t, b, "MARKER-CONSOLIDATED") {
		t.Fatal("the render after the write reused the prompt gathered before it: the new MEMORY.md is missing")
	}
}
