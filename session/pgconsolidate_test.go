package session_test

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

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
)

// chatAndMemory answers chat turns with a long reply and consolidation
// calls as memoryClient does.
type chatAndMemory struct {
	mu sync.Mutex
	memoryClient
}

func (c *chatAndMemory) Stream(ctx context.Context, req llm.Request, on func(string)) (llm.Response, error) {
	reply := strings.Repeat("A reply long enough to pass the threshold soon. ", 4)
	on(reply)
	return llm.Response{Content: reply}, nil
}

func (c *chatAndMemory) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.memoryClient.Complete(ctx, req)
}

func pgSession(t *testing.T, st *session.PGStore, client llm.Client, key, user string) *session.Session {
	t.Helper()
	co := consolidate.Options{Threshold: 100, Keep: 50}
	s, err := session.Open(context.Background(), session.Options{
		Workspace: newWorkspace(t), Key: key, User: user, Client: client, Store: st,
		Counter: llmtest.Counter{}, Consolidate: &co,
		Now: func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// With sessions in PostgreSQL, consolidation writes the user's MEMORY.md
// and HISTORY.md rows in the transaction that moves the pointer: after
// every run the pointer and the files agree (each fact in the memory file
// has its history entry, and nothing is in the workspace folder), and /new
// archives and trims in one step too.
func TestPGConsolidationStoredWithPointer(t *testing.T) {
	ctx := context.Background()
	st := pgStore(t, uniqueWorkspace(t))
	client := &chatAndMemory{memoryClient: memoryClient{name: "a"}}
	s := pgSession(t, st, client, "chat-1", "ana")
	for i := range 8 {
		if _, err := s.Turn(ctx, session.TurnInput{Text: fmt.Sprintf("message %d with some words in it", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil { // waits for the background run
		t.Fatal(err)
	}
	state, _ := st.Load(ctx, "chat-1")
	mem, okM, _ := st.MemoryFile(ctx, "ana", pgstore.MemoryFileName)
	hist, okH, _ := st.MemoryFile(ctx, "ana", pgstore.HistoryFileName)
	if state.LastConsolidated == 0 || !okM || !okH {
		t.Fatalf("no consolidation stored: pointer %d, memory %v, history %v", state.LastConsolidated, okM, okH)
	}
	facts := strings.Count(mem, "- fact ")
	if facts == 0 || strings.Count(hist, "- fact ") != facts || !strings.HasSuffix(hist, "\n\n") {
		t.Fatalf("memory has %d facts, history:\n%s", facts, hist)
	}
	root := s.Builder().Workspace().Root()
	for _, f := range []string{"memory/MEMORY.md", "memory/HISTORY.md"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s written to the folder with sessions in PostgreSQL", f)
		}
	}

	// /new: everything left is archived and the session emptied, together.
	s2 := pgSession(t, st, client, "chat-1", "ana")
	if err := s2.New(ctx); err != nil {
		t.Fatal(err)
	}
	state, _ = st.Load(ctx, "chat-1")
	hist2, _, _ := st.MemoryFile(ctx, "ana", pgstore.HistoryFileName)
	if len(state.Messages) != 0 || state.LastConsolidated != 0 || strings.Count(hist2, "- fact ") != facts+1 {
		t.Fatalf("after /new: %d messages, pointer %d, history:\n%s", len(state.Messages), state.LastConsolidated, hist2)
	}
}

// Two replicas consolidating one session at once store each chunk once:
// the turn lock and the pointer check let one of them write.
func TestPGConsolidationOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	ws := uniqueWorkspace(t)
	a, b := pgStore(t, ws), pgStore(t, ws)
	client := &chatAndMemory{memoryClient: memoryClient{name: "x"}}
	// Fill the session without consolidating.
	for i := range 10 {
		msgs := []string{fmt.Sprintf("question %d with a few more words", i), strings.Repeat("answer words ", 10)}
		for j, text := range msgs {
			role := "user"
			if j == 1 {
				role = "assistant"
			}
			if err := a.Append(ctx, "k", msg(role, text)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, st := range []*session.PGStore{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			files := st.MemoryFiles("ana")
			c := consolidate.New(consolidate.Options{Client: client, Files: files, Counter: llmtest.Counter{}, Threshold: 100, Keep: 50})
			_, errs[i] = session.Consolidate(ctx, st, "k", c, files, session.ConsolidateOptions{LockWait: 10 * time.Second})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, session.ErrPointerMoved) {
			t.Fatal(err)
		}
	}
	state, _ := a.Load(ctx, "k")
	hist, _, _ := a.MemoryFile(ctx, "ana", pgstore.HistoryFileName)
	mem, _, _ := a.MemoryFile(ctx, "ana", pgstore.MemoryFileName)
	if n := strings.Count(hist, "- fact "); n == 0 || n != strings.Count(mem, "- fact ") || state.LastConsolidated == 0 {
		t.Fatalf("pointer %d; history:\n%s\nmemory:\n%s", state.LastConsolidated, hist, mem)
	}
	// Every chunk consolidated once: as many model calls as entries.
	if client.n != strings.Count(hist, "- fact ") {
		t.Fatalf("%d consolidation calls for %d history entries", client.n, strings.Count(hist, "- fact "))
	}
}

func msg(role, text string) messages.Message {
	return messages.Message{Role: messages.Role(role), Content: messages.TextContent(text), Time: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}
