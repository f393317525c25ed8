package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/workspace"
)

// newWorkspace makes a small workspace with one skill.
func newWorkspace(t *testing.T) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "AGENTS.md", "# Agent\nBe brief.\n")
	write(t, dir, "skills/tea/SKILL.md", "---\nname: tea\ndescription: How to brew tea.\n---\nBoil water, wait three minutes.\n")
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func write(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, ws *workspace.Workspace, client llm.Client, key string) *session.Session {
	t.Helper()
	s, err := session.Open(context.Background(), session.Options{
		Workspace: ws, Key: key, Channel: "cli", User: "ana", Client: client,
		Now: func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func TestTurnBuildsSavesAndReplays(t *testing.T) {
	srv := llmtest.New(t, llmtest.OpenAI)
	srv.Push(llmtest.Reply{Text: "Hello Ana."}, llmtest.Reply{Text: "Boil it."})
	client, err := llm.New(srv.Config(), llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t)
	s := open(t, ws, client, "cli_ana")
	var streamed strings.Builder
	res, err := s.Turn(context.Background(), session.TurnInput{Text: "hi", OnDelta: func(d string) { streamed.WriteString(d) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "Hello Ana." || streamed.String() != "Hello Ana." || !res.Saved || res.Cut != "" {
		t.Fatalf("result %+v, streamed %q", res, streamed.String())
	}
	res, err = s.Turn(context.Background(), session.TurnInput{Text: "/tea please"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Build.Expansions) != 1 || res.Build.Expansions[0].Name != "tea" {
		t.Errorf("skill not expanded: %+v", res.Build.Expansions)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[1].JSON["messages"].([]any)
	if len(msgs) != 4 { // system, user, assistant, user
		t.Fatalf("second request has %d messages: %s", len(msgs), reqs[1].Body)
	}
	sys := msgs[0].(map[string]any)["content"].(string)
	if !strings.Contains(sys, "Be brief.") {
		t.Errorf("system prompt lacks AGENTS.md: %q", sys)
	}
	if got := msgs[1].(map[string]any)["content"]; got != "hi" {
		t.Errorf("replayed user message %q: the runtime block must not be replayed", got)
	}
	cur := msgs[3].(map[string]any)["content"].(string)
	if !strings.Contains(cur, `<skill_content name="tea"`) || !strings.Contains(cur, "Boil water") ||
		!strings.Contains(cur, messages.RuntimeOpen) || !strings.Contains(cur, "/tea please") {
		t.Errorf("current message: %q", cur)
	}

	// The file: metadata, then four messages with timestamps; the skill
	// body and the runtime block are not kept.
	data, err := os.ReadFile(filepath.Join(ws.Root(), ".loom/sessions/cli_ana.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := messages.ReadSession(bytes.NewReader(data), "s", messages.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta == nil || h.Meta.Key != "cli_ana" || len(h.Messages) != 4 {
		t.Fatalf("saved %+v %d messages:\n%s", h.Meta, len(h.Messages), data)
	}
	if h.Messages[2].Content.Text != "/tea please" || h.Messages[0].Time.IsZero() {
		t.Errorf("saved user message %+v", h.Messages[2])
	}
	fi, _ := os.Stat(filepath.Join(ws.Root(), ".loom/sessions/cli_ana.jsonl"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("session file mode %v, want 0600", fi.Mode().Perm())
	}
}

// stubClient streams a scripted reply; with block set it sends the first
// piece and then waits for the context to end, as a slow model does.
type stubClient struct {
	mu     sync.Mutex
	block  bool
	reply  string
	gotReq []llm.Request
	// started is closed when a blocking stream has sent its first piece.
	started chan struct{}
}

func (c *stubClient) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return c.Stream(ctx, req, func(string) {})
}

func (c *stubClient) Stream(ctx context.Context, req llm.Request, on func(string)) (llm.Response, error) {
	c.mu.Lock()
	c.gotReq = append(c.gotReq, req)
	c.mu.Unlock()
	if !c.block {
		on(c.reply)
		return llm.Response{Content: c.reply}, nil
	}
	on("partial ")
	if c.started != nil {
		close(c.started)
	}
	<-ctx.Done()
	return llm.Response{Content: "partial "}, errors.Join(llm.ErrStreamCut, ctx.Err())
}

func TestCancelledTurnKeepsUserAndPartialReply(t *testing.T) {
	ws := newWorkspace(t)
	c := &stubClient{block: true, started: make(chan struct{})}
	s := open(t, ws, c, "cli_ana")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { <-c.started; cancel(errors.New("signal: terminated")) }()
	res, err := s.Turn(ctx, session.TurnInput{Text: "tell me a long story"})
	if err == nil {
		t.Fatal("a cut turn returned no error")
	}
	if !res.Saved || res.Cut != "signal: terminated" || res.Reply != "partial " {
		t.Fatalf("result %+v", res)
	}
	st, err := s.Store().Load(context.Background(), "cli_ana")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 2 || st.Messages[0].Content.Text != "tell me a long story" || st.Messages[1].Content.Text != "partial " {
		t.Fatalf("saved %+v", st.Messages)
	}
	if why, ok := session.IsCut(st.Messages[1]); !ok || why != "signal: terminated" {
		t.Errorf("partial reply not marked as cut: %q %v", why, ok)
	}
	// The next turn replays both.
	c.block, c.reply = false, "ok"
	if _, err := s.Turn(context.Background(), session.TurnInput{Text: "go on"}); err != nil {
		t.Fatal(err)
	}
	last := c.gotReq[len(c.gotReq)-1]
	if len(last.Messages) != 3 || last.Messages[0].Content.Text != "tell me a long story" || last.Messages[1].Content.Text != "partial " {
		t.Errorf("replayed %+v", last.Messages)
	}
}

func TestTurnsOnOneSessionAreSerialized(t *testing.T) {
	ws := newWorkspace(t)
	c := &stubClient{reply: "ok"}
	a := open(t, ws, c, "k")
	b := open(t, ws, c, "k") // a second Session on the same key
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		s := a
		if i%2 == 1 {
			s = b
		}
		go func() {
			defer wg.Done()
			if _, err := s.Turn(context.Background(), session.TurnInput{Text: "m" + itoa(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	st, err := a.Store().Load(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 40 {
		t.Fatalf("%d messages, want 40", len(st.Messages))
	}
	for i := 0; i < 40; i += 2 {
		if st.Messages[i].Role != messages.RoleUser || st.Messages[i+1].Role != messages.RoleAssistant {
			t.Fatalf("message %d: turns interleaved: %s then %s", i, st.Messages[i].Role, st.Messages[i+1].Role)
		}
	}
}

var consolidateOptions = consolidate.Options{Threshold: 100, Keep: 50}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// slowConsolidator answers chat turns at once and consolidation calls
// only when the context ends.
type slowConsolidator struct{ stubClient }

func (c *slowConsolidator) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	<-ctx.Done()
	return llm.Response{}, ctx.Err()
}

func TestCloseDrainIsBounded(t *testing.T) {
	ws := newWorkspace(t)
	c := &slowConsolidator{stubClient{reply: strings.Repeat("word ", 40)}}
	s, err := session.Open(context.Background(), session.Options{
		Workspace: ws, Key: "k", Client: c, Counter: llmtest.Counter{},
		Consolidate: &consolidateOptions,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.Turn(context.Background(), session.TurnInput{Text: "turn " + itoa(i) + strings.Repeat(" filler", 30)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "consolidation still running") {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	st, _ := session.NewFileStore(ws.Abs(session.Dir), session.FileOptions{}).Load(context.Background(), "k")
	if st.LastConsolidated != 0 || len(st.Messages) != 6 {
		t.Errorf("after a stopped consolidation: pointer %d, %d messages", st.LastConsolidated, len(st.Messages))
	}
	if _, err := s.Turn(context.Background(), session.TurnInput{Text: "late"}); !errors.Is(err, session.ErrClosed) {
		t.Errorf("turn after Close: %v", err)
	}
}

// gateClient holds each reply for key "a" until gate closes.
type gateClient struct{ gate chan struct{} }

func (c *gateClient) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return c.Stream(ctx, req, func(string) {})
}

func (c *gateClient) Stream(ctx context.Context, req llm.Request, on func(string)) (llm.Response, error) {
	last := req.Messages[len(req.Messages)-1].Content.String()
	if strings.HasPrefix(last, "wait") {
		<-c.gate
	}
	return llm.Response{Content: "ok"}, nil
}

func TestDifferentSessionsRunInParallel(t *testing.T) {
	ws := newWorkspace(t)
	c := &gateClient{gate: make(chan struct{})}
	a, b := open(t, ws, c, "a"), open(t, ws, c, "b")
	done := make(chan error, 1)
	go func() {
		_, err := a.Turn(context.Background(), session.TurnInput{Text: "wait for me"})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := b.Turn(ctx, session.TurnInput{Text: "go"}); err != nil {
		t.Fatalf("session b waited for session a: %v", err)
	}
	close(c.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A signal that lands before the model call still leaves the user's
// message saved.
func TestTurnCancelledBeforeTheCallKeepsUserMessage(t *testing.T) {
	ws := newWorkspace(t)
	c := &stubClient{block: true}
	s := open(t, ws, c, "early")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("terminated"))
	res, err := s.Turn(ctx, session.TurnInput{Text: "are you there?"})
	if err == nil || !res.Saved {
		t.Fatalf("res %+v err %v", res, err)
	}
	st, _ := s.Store().Load(context.Background(), "early")
	if len(st.Messages) < 1 || st.Messages[0].Content.Text != "are you there?" {
		t.Errorf("saved %+v", st.Messages)
	}
}

// lockingStore is a FileStore with a turn lock that counts its holders.
type lockingStore struct {
	*session.FileStore
	mu          sync.Mutex
	held, peaks int
	calls       int
}

func (l *lockingStore) LockTurn(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	l.held++
	l.calls++
	l.peaks = max(l.peaks, l.held)
	l.mu.Unlock()
	return func() { l.mu.Lock(); l.held--; l.mu.Unlock() }, nil
}

func TestTurnHoldsTheStoresTurnLock(t *testing.T) {
	ws := newWorkspace(t)
	st := &lockingStore{FileStore: session.NewFileStore(t.TempDir(), session.FileOptions{})}
	s, err := session.Open(context.Background(), session.Options{Workspace: ws, Key: "k", Client: &stubClient{reply: "ok"}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for range 2 {
		if _, err := s.Turn(context.Background(), session.TurnInput{Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.New(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.calls != 3 || st.held != 0 || st.peaks != 1 {
		t.Errorf("turn lock: %d calls, %d held, peak %d", st.calls, st.held, st.peaks)
	}
}

// With no model consolidation, /new must still keep the conversation: the
// raw turns go to HISTORY.md before the session is emptied (issue 12, item 12).
func TestNewWithoutConsolidationArchivesRaw(t *testing.T) {
	client := &stubClient{reply: "Noted, you like green tea."}
	ws := newWorkspace(t)
	s := open(t, ws, client, "cli_ana")
	if _, err := s.Turn(context.Background(), session.TurnInput{Text: "I like green tea"}); err != nil {
		t.Fatal(err)
	}
	if err := s.New(context.Background()); err != nil {
		t.Fatal(err)
	}
	hist, err := os.ReadFile(filepath.Join(ws.Root(), "memory", "HISTORY.md"))
	if err != nil {
		t.Fatalf("/new wrote no HISTORY.md: %v", err)
	}
	for _, want := range []string{"[2026-03-01 10:00] [RAW] 2 messages", "USER: I like green tea", "ASSISTANT: Noted, you like green tea."} {
		if !strings.Contains(string(hist), want) {
			t.Errorf("HISTORY.md lacks %q:\n%s", want, hist)
		}
	}
	data, err := os.ReadFile(filepath.Join(ws.Root(), ".loom/sessions/cli_ana.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := messages.ReadSession(bytes.NewReader(data), "s", messages.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 0 {
		t.Errorf("session after /new keeps %d messages", len(h.Messages))
	}
	// A second /new on an empty session archives nothing more.
	if err := s.New(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(ws.Root(), "memory", "HISTORY.md")); string(again) != string(hist) {
		t.Errorf("empty /new changed HISTORY.md:\n%s", again)
	}
}
