package prompt_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// TestAgedResultIsRefreshedOnce: a watched workspace's result that is stale
// only by age (freshFor) is gathered again by one caller; a caller arriving
// while that refresh is in flight gets the last result at once instead of
// gathering too. Before, every concurrent caller gathered, and under a
// server's load that stalled every request in flight every two seconds.
func TestAgedResultIsRefreshedOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("# Agent\n\nBe brief.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	b := prompt.New(ws)
	defer b.Close()
	ctx := context.Background()
	opts := prompt.Options{GOOS: "linux", GOARCH: "amd64"}
	first, err := b.Render(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !ws.Watching() {
		t.Skip("no watcher on this system")
	}

	// A refresh is in flight: an aged result is served as it is.
	b.AgeLast(time.Hour)
	aged := b.LastAt()
	b.HoldRefresh(true)
	got, err := b.Render(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got != first || !b.LastAt().Equal(aged) {
		t.Fatalf("a caller during a refresh gathered again (same result: %v, last.at moved: %v)", got == first, !b.LastAt().Equal(aged))
	}

	// No refresh in flight: the aged result is gathered again.
	b.HoldRefresh(false)
	if _, err := b.Render(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if b.LastAt().Equal(aged) {
		t.Fatal("an aged result was not gathered again")
	}
	// And the refresh is over: the next aged render gathers again too.
	b.AgeLast(time.Hour)
	aged = b.LastAt()
	if _, err := b.Render(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if b.LastAt().Equal(aged) {
		t.Fatal("the refresh flag stayed set after a refresh")
	}
}
