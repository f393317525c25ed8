package extract_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/loomctx/loom/llm/extract"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/memory"
)

var factRE = regexp.MustCompile(`fact (\d+)\.`)

// Every turn of a burst says one new fact; the fake answers with it.
func burstServer(t *testing.T, delay time.Duration) *llmtest.Server {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Default = func(r llmtest.Request) llmtest.Reply {
		msgs := r.JSON["messages"].([]any)
		user := msgs[len(msgs)-1].(map[string]any)["content"].(string)
		m := factRE.FindStringSubmatch(user)
		if m == nil {
			return llmtest.Reply{Status: 400, Message: "no fact"}
		}
		n := m[1]
		return llmtest.Reply{Delay: delay, Text: fmt.Sprintf(`{"user_instructions":null,"user_profile":[{"content":"The user knows fact %s.","supersedes_id":null}]}`, n)}
	}
	return s
}

func TestBurstNothingDropped(t *testing.T) {
	s := burstServer(t, 0)
	st := openStore(t)
	w := extract.NewWorker(extract.New(extract.Options{Client: mustClient(t, s), Store: st, MaxMessages: 1}), extract.WorkerOptions{})
	for i := range 100 {
		if err := w.Submit(extract.Job{Chat: "c", Messages: conversation(fmt.Sprintf("Remember fact %d.", i))}); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := w.Stats()
	t.Logf("burst of 100 into the default queue: %+v", got)
	want := extract.Stats{Submitted: 100, Done: 100, Added: 100}
	if got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	if ms := active(t, st); len(ms) != 100 {
		t.Errorf("%d memories stored, want 100", len(ms))
	}
	if err := w.Submit(extract.Job{}); !errors.Is(err, extract.ErrClosed) {
		t.Errorf("submit after close: %v", err)
	}
}

func TestBurstSmallQueueCountsDrops(t *testing.T) {
	s := burstServer(t, 20*time.Millisecond)
	st := openStore(t)
	w := extract.NewWorker(extract.New(extract.Options{Client: mustClient(t, s), Store: st, MaxMessages: 1}), extract.WorkerOptions{QueueSize: 10})
	refused := 0
	for i := range 100 {
		if err := w.Submit(extract.Job{Messages: conversation(fmt.Sprintf("Remember fact %d.", i))}); errors.Is(err, extract.ErrQueueFull) {
			refused++
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := w.Stats()
	t.Logf("burst of 100 into a queue of 10: %+v", got)
	if got.Dropped != int64(refused) || got.Dropped == 0 || got.Done+got.Dropped != 100 || got.Failed != 0 {
		t.Errorf("stats = %+v, refused %d", got, refused)
	}
	if ms := active(t, st); int64(len(ms)) != got.Done {
		t.Errorf("%d memories, %d done", len(ms), got.Done)
	}
}

func TestCloseBoundedWait(t *testing.T) {
	s := burstServer(t, 5*time.Second)
	st := openStore(t)
	w := extract.NewWorker(extract.New(extract.Options{Client: mustClient(t, s), Store: st, MaxMessages: 1}), extract.WorkerOptions{})
	for i := range 3 {
		w.Submit(extract.Job{Messages: conversation(fmt.Sprintf("Remember fact %d.", i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("close took %s", d)
	}
	got := w.Stats()
	if got.Failed != 1 || got.Abandoned != 2 || got.Done != 0 {
		t.Errorf("stats = %+v", got)
	}
	if ms, _ := st.List(context.Background(), memory.Query{AllUsers: true}); len(ms) != 0 {
		t.Errorf("memories written: %v", ms)
	}
}
