package inspector

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/server"
)

// Reading the memory database is not a change: SQLite creates, removes or
// re-permissions its -wal and -shm files when a connection opens or
// closes, and a page told about those would refresh, read the database
// again and be told again, for as long as it is open. A memory written by
// another process still is a change.
func TestReadingMemoriesIsNotAChange(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("# Agents\n"), 0o644)
	remember := func(content string) {
		t.Helper()
		store, err := memory.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		if _, err := store.Add(context.Background(), memory.NewMemory{Category: "personal_fact", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	remember("The user prefers metric units.")

	ts := serveInspector(t, server.Options{Dir: root})
	view := func(query string) {
		t.Helper()
		resp, err := http.Get(ts.URL + "/inspect/default/view?" + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("view?%s: %d", query, resp.StatusCode)
		}
	}
	view("") // the render looks the database up, so the feed covers it

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/inspect/default/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	changes := make(chan string, 100)
	connected := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == ": connected":
				close(connected)
			case strings.HasPrefix(line, "event: change"):
				changes <- line
			}
		}
	}()
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream did not start")
	}

	for _, q := range []string{"", "message=metric+units", "", "message=which+units", "budget=500"} {
		view(q)
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case c := <-changes:
		t.Fatalf("the page was told of a change (%s) after it only read the memories: it would refresh for as long as it is open", c)
	case <-time.After(time.Second):
	}

	remember("The user lives in Lyon.")
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("a memory written by another process was not reported as a change")
	}
}
