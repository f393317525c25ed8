package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
)

func user(text string) messages.Message {
	return messages.Message{Role: messages.RoleUser, Content: messages.TextContent(text)}
}

func assistant(text string) messages.Message {
	return messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(text)}
}

// recordConversation prepares and records one Conversation turn.
func recordConversation(t *testing.T, s *session.Session, id string, reply string, conv ...messages.Message) *session.Prepared {
	t.Helper()
	p, err := s.Prepare(context.Background(), session.TurnInput{Conversation: conv, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if p.Messages != nil || p.Prompt == nil {
		t.Fatalf("a Conversation turn: messages %v, prompt %v", p.Messages, p.Prompt)
	}
	if err := p.Record(context.Background(), session.Reply{Content: reply}); err != nil {
		t.Fatal(err)
	}
	return p
}

// A Conversation turn stores the client's new messages and the reply in
// one write; the same conversation sent again (a retry of a turn whose
// answer the client never saw) is not stored twice, nor is a turn whose
// Idempotency-Key is stored; a first message repeated without a key is
// two turns.
func TestRecordStoresOnceForARetry(t *testing.T) {
	client, err := llm.New(llmtest.New(t, llmtest.OpenAI).Config(), llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, newWorkspace(t), client, "conv")
	recordConversation(t, s, "", "Hello.", user("hi"))
	recordConversation(t, s, "", "Hello again.", user("hi")) // no history, no key: a new turn
	conv := []messages.Message{user("hi"), assistant("Hello."), user("tea?")}
	if p := recordConversation(t, s, "", "Yes.", conv...); p.Duplicate {
		t.Fatal("first sending marked a duplicate")
	}
	if p := recordConversation(t, s, "", "Yes, again.", conv...); !p.Duplicate {
		t.Fatal("the same conversation sent again was not marked a duplicate")
	}
	recordConversation(t, s, "key-1", "One.", user("one"))
	recordConversation(t, s, "key-1", "One again.", user("one"))
	st, err := s.Store().Load(context.Background(), "conv")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range st.Messages {
		got = append(got, m.Content.String())
	}
	want := []string{"hi", "Hello.", "hi", "Hello again.", "tea?", "Yes.", "one", "One."}
	if len(got) != len(want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("stored %q, want %q", got, want)
		}
	}
	if _, ok := st.Messages[4].Extra()[session.TurnKey]; !ok {
		t.Fatalf("the turn's first message has no %s: %v", session.TurnKey, st.Messages[4].Extra())
	}
}

// A Text turn retried with the same ID answers the stored reply and
// calls the model once.
func TestTurnRetryWithIDReplays(t *testing.T) {
	srv := llmtest.New(t, llmtest.OpenAI)
	srv.Push(llmtest.Reply{Text: "Stored reply."}, llmtest.Reply{Text: "A second call."})
	client, err := llm.New(srv.Config(), llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, newWorkspace(t), client, "retry")
	for i := 0; i < 2; i++ {
		res, err := s.Turn(context.Background(), session.TurnInput{Text: "hello", ID: "req-7"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != "Stored reply." || !res.Saved {
			t.Fatalf("try %d: %+v", i, res)
		}
	}
	st, _ := s.Store().Load(context.Background(), "retry")
	if len(st.Messages) != 2 {
		t.Fatalf("%d messages stored", len(st.Messages))
	}
}

// The turn lock is held from Prepare to Record: a second Prepare of the
// session waits, and Record's write lands before the next turn's.
func TestPrepareHoldsTheTurnUntilRecord(t *testing.T) {
	client, err := llm.New(llmtest.New(t, llmtest.OpenAI).Config(), llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t)
	a, b := open(t, ws, client, "order"), open(t, ws, client, "order")
	first, err := a.Prepare(context.Background(), session.TurnInput{Conversation: []messages.Message{user("first")}})
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		p, err := b.Prepare(context.Background(), session.TurnInput{Conversation: []messages.Message{user("second")}})
		if err == nil {
			err = p.Record(context.Background(), session.Reply{Content: "2"})
		}
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("the second turn ran while the first was prepared: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := first.Record(context.Background(), session.Reply{Content: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if err := first.Record(context.Background(), session.Reply{}); err != session.ErrTurnEnded {
		t.Fatalf("second Record: %v", err)
	}
	first.Release() // after Record: nothing
	st, _ := a.Store().Load(context.Background(), "order")
	if len(st.Messages) != 4 || st.Messages[0].Content.String() != "first" || st.Messages[2].Content.String() != "second" {
		t.Fatalf("stored %+v", st.Messages)
	}
	// Release frees the lock without storing.
	p, err := a.Prepare(context.Background(), session.TurnInput{Conversation: []messages.Message{user("dropped")}})
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	p, err = b.Prepare(ctx, session.TurnInput{Conversation: []messages.Message{user("after")}})
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	if st, _ := a.Store().Load(context.Background(), "order"); len(st.Messages) != 4 {
		t.Fatalf("a released turn was stored: %d messages", len(st.Messages))
	}
}
