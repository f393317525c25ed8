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
	"github.com/loomctx/loom/messages"
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

// session grows a conversation by one turn per fact, as a session does.
type session struct{ msgs []messages.Message }

func (s *session) turn(fact int) []messages.Message {
	s.msgs = append(s.msgs,
		messages.Message{Role: "user", Content: messages.TextContent(fmt.Sprintf("Remember fact %d.", fact))},
		messages.Message{Role: "assistant", Content: messages.TextContent("Noted.")})
	return s.msgs
}

// A burst of 100 turns on one chat, submitted faster than the model
// answers: the jobs are folded into one waiting job per chat, and the
// pointer makes the worker mine every turn since the last it mined, so all
// 100 facts are stored and none is dropped.
func TestBurstNothingDropped(t *testing.T) {
	s := burstServer(t, time.Millisecond)
	st := openStore(t)
	w := extract.NewWorker(extract.New(extract.Options{Client: mustClient(t, s), Store: st, MaxMessages: 1}), extract.WorkerOptions{})
	var sess session
	for i := range 100 {
		if err := w.Submit(extract.Job{Chat: "c", Messages: sess.turn(i), New: 2}); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := w.Stats()
	t.Logf("burst of 100 on one chat: %+v", got)
	if got.Submitted != 100 || got.Coalesced+got.Done != 100 || got.Dropped != 0 || got.Failed != 0 || got.Added != 100 || got.Calls != 100 || got.Queued != 0 {
		t.Errorf("stats = %+v", got)
	}
	if ms := active(t, st); len(ms) != 100 {
		t.Errorf("%d memories stored, want 100", len(ms))
	}
	if err := w.Submit(extract.Job{}); !errors.Is(err, extract.ErrClosed) {
		t.Errorf("submit after close: %v", err)
	}
}

// A queue of 2 chats under 10 chats' bursts: Submit waits for room
// instead of dropping, and every fact of every chat is stored.
func TestBurstSmallQueueWaitsAndLosesNothing(t *testing.T) {
	s := burstServer(t, 2*time.Millisecond)
	st := openStore(t)
	w := extract.NewWorker(extract.New(extract.Options{Client: mustClient(t, s), Store: st, MaxMessages: 1}), extract.WorkerOptions{QueueSize: 2})
	chats := make([]session, 10)
	for i := range 100 {
		c := i % 10
		if err := w.Submit(extract.Job{Chat: fmt.Sprint("c", c), Messages: chats[c].turn(i), New: 2}); err != nil {
			t.Fatal(err)
		}
		if q := w.Stats().Queued; q > 2 {
			t.Fatalf("%d chats queued, bound 2", q)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := w.Stats()
	t.Logf("100 turns on 10 chats into a queue of 2: %+v", got)
	if got.Dropped != 0 || got.Failed != 0 || got.Added != 100 || got.Done+got.Coalesced != 100 {
		t.Errorf("stats = %+v", got)
	}
	if ms := active(t, st); len(ms) != 100 {
		t.Errorf("%d memories, want 100", len(ms))
	}
}

func TestCloseBoundedWait(t *testing.T) {
	s := burstServer(t, 5*time.Second)
	st := openStore(t)
	w := extract.NewWorker(extract.New(extract.Options{Client: mustClient(t, s), Store: st, MaxMessages: 1}), extract.WorkerOptions{})
	for i := range 3 {
		w.Submit(extract.Job{Chat: fmt.Sprint("c", i), Messages: conversation(fmt.Sprintf("Remember fact %d.", i))})
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
