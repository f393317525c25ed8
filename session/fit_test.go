package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/fittest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/tokens"
)

// TestTurnFitsContextWindow: a session whose stored history is some 40k
// tokens, with an 8,000-token window and 500 for the reply, sends the model
// at most 7,500 tokens, counted from the request it got: the note, the
// newest turns whole, no orphaned tool call or result.
func TestTurnFitsContextWindow(t *testing.T) {
	ws := newWorkspace(t)
	c, _ := tokens.Get(tokens.O200kBase)
	client := &stubClient{reply: "done"}
	s, err := session.Open(context.Background(), session.Options{
		Workspace: ws, Key: "long", User: "ana", Client: client, Counter: c, Window: 8000, Reserve: 500,
		Now: func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	hist := fittest.Conversation(110, 300)
	if err := s.Store().Append(context.Background(), "long", hist...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Turn(context.Background(), session.TurnInput{Text: "what did we find?"}); err != nil {
		t.Fatal(err)
	}
	req := client.gotReq[0]
	sent := append([]messages.Message{{Role: messages.RoleSystem, Content: messages.TextContent(req.System)}}, req.Messages...)
	wire, err := fittest.Wire(sent)
	if err != nil {
		t.Fatal(err)
	}
	n := fittest.Tokens(c.Count, wire)
	t.Logf("the model got %d messages, %d tokens", len(wire), n)
	if n > 7500 {
		t.Errorf("%d tokens, over 7,500", n)
	}
	if !strings.HasPrefix(wire[1].Text(), "[loom: ") || wire[2].Role != "user" {
		t.Errorf("no note, or the kept history does not start a turn: %.60q", wire[1].Text())
	}
	for _, o := range fittest.Orphans(wire) {
		t.Error(o)
	}
	if !strings.Contains(wire[len(wire)-1].Text(), "what did we find?") {
		t.Errorf("the current message is not last")
	}
}

// When fitting drops history in a session whose start consolidation has
// summarised, the note at the cut carries the conversation log's latest
// entries, and says they tell of what came before the dropped messages
// (a session replays only what consolidation left, so those are not in
// the log). Without consolidation the note only counts.
func TestTurnFitNoteCarriesHistory(t *testing.T) {
	const log = "[2026-02-27 09:00] Ana and the agent planned the Q1 report.\n\n" +
		"[2026-02-28 10:00] They chose churn as the report's main metric.\n\n" +
		"[2026-03-01 09:30] Ana asked for the draft tables by Friday.\n"
	c, _ := tokens.Get(tokens.O200kBase)
	for _, consolidated := range []bool{true, false} {
		ws := newWorkspace(t)
		write(t, ws.Root(), "memory/HISTORY.md", log)
		client := &stubClient{reply: "done"}
		s, err := session.Open(context.Background(), session.Options{
			Workspace: ws, Key: "long", User: "ana", Client: client, Counter: c, Window: 8000, Reserve: 500,
			Now: func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) },
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		old := []messages.Message{
			{Role: messages.RoleUser, Content: messages.TextContent("Let us plan the Q1 report.")},
			{Role: messages.RoleAssistant, Content: messages.TextContent("Churn first, then revenue.")},
		}
		ctx := context.Background()
		if err := s.Store().Append(ctx, "long", append(old, fittest.Conversation(110, 300)...)...); err != nil {
			t.Fatal(err)
		}
		if consolidated {
			if err := s.Store().MoveConsolidated(ctx, "long", 0, len(old)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Turn(ctx, session.TurnInput{Text: "what did we find?"}); err != nil {
			t.Fatal(err)
		}
		req := client.gotReq[0]
		note := req.Messages[0].Content.String()
		if !strings.HasPrefix(note, "[loom: ") {
			t.Fatalf("no note at the cut: %.80q", note)
		}
		for _, entry := range []string{"[2026-02-27 09:00] Ana and the agent planned", "[2026-02-28 10:00] They chose churn", "[2026-03-01 09:30] Ana asked"} {
			if strings.Contains(note, entry) != consolidated {
				t.Errorf("consolidated %v: entry %q in the note is %v:\n%s", consolidated, entry, !consolidated, note)
			}
		}
		if said := strings.Contains(note, "summarises what came before them; its latest entries follow."); said != consolidated {
			t.Errorf("consolidated %v: the note says what the entries cover: %v\n%s", consolidated, said, note)
		}
		if strings.Contains(note, "Let us plan the Q1 report") {
			t.Error("a consolidated message was replayed")
		}
	}
}
