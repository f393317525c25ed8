package prompt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/prompt"
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
	ws, b := watchedBuilderAt(t, dir)
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

// TestResultsKeptPerOptions: a server alternates between users and
// channels; each set of options keeps its own last result (up to a bound),
// so switching back does not gather the workspace again, and an edit still
// reaches every one of them.
func TestResultsKeptPerOptions(t *testing.T) {
	dir := t.TempDir()
	agents := filepath.Join(dir, "AGENTS.md")
	if err := os.WriteFile(agents, []byte("# Agent\n\nBe brief.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, b := watchedBuilderAt(t, dir)
	if !ws.Watching() {
		t.Skip("no watcher on this system")
	}
	ctx := context.Background()
	render := func(user string) *prompt.Result {
		t.Helper()
		res, err := b.Render(ctx, prompt.Options{GOOS: "linux", GOARCH: "amd64", User: user})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ana, bob := render("ana"), render("bob")
	if render("ana") != ana || render("bob") != bob {
		t.Fatal("switching between two users rendered again instead of reusing each one's result")
	}
	// More option sets than the bound: the oldest is let go.
	for i := range 16 {
		render(fmt.Sprintf("user%d", i))
	}
	if render("ana") == ana {
		t.Error("the builder kept more results than its bound")
	}
	// An edit reaches every kept result.
	render("bob")
	if err := os.WriteFile(agents, []byte("# Agent\n\nBe thorough.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := render("bob")
		if strings.Contains(res.Prompt, "Be thorough.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's prompt after the edit:\n%s", res.Prompt)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
