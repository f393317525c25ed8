package messages

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/memory"
)

type recallOutput struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Recall *memory.Recall `json:"recall"`
}

func messagesJSON(t *testing.T, ws, msg string) recallOutput {
	t.Helper()
	ios, _, out, errOut := cmdutil.Test()
	cmd := NewCmdMessages(ios, nil)
	cmd.SetArgs([]string{"-w", ws, "--format", "json", "--user", "ana", "--message", msg, "--now", "2026-03-01T10:15:00Z"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var got recallOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return got
}

// With memory.retrieval: relevant, each turn's relevant memories go into
// its runtime block and the report, and the system prompt is the same
// byte for byte whatever the message asks.
func TestMessagesRecall(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, ws, "loom.yaml", "memory:\n  retrieval: relevant\n  budget: 120\n")
	s, err := memory.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ms []memory.Memory
	facts := []string{"Ana's sister Lena lives in Porto.", "Ana drives a green Subaru Forester.", "Ana is allergic to sesame."}
	for i := range 40 {
		c := fmt.Sprintf("Ana mentioned chore number %d on a quiet afternoon.", i)
		if i < len(facts) {
			c = facts[i] // the oldest, so priority (newest first) leaves them out
		}
		ms = append(ms, memory.Memory{ID: fmt.Sprintf("m%02d", i), Category: "personal_fact", User: "ana", Content: c, CreatedAt: t0.Add(time.Duration(i) * time.Hour)})
	}
	if err := s.Import(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	s.Close()

	sister := messagesJSON(t, ws, "Where does my sister live these days?")
	car := messagesJSON(t, ws, "Which car do I drive?")
	none := messagesJSON(t, ws, "??? !!!")
	if sister.Messages[0].Content != car.Messages[0].Content || car.Messages[0].Content != none.Messages[0].Content {
		t.Fatalf("the system prompt changed with the message:\n%s\n---\n%s", sister.Messages[0].Content, car.Messages[0].Content)
	}
	sys := sister.Messages[0].Content
	if strings.Contains(sys, "Porto") || strings.Contains(sys, "Subaru") || !strings.Contains(sys, "chore number 39") {
		t.Errorf("the system prompt should hold the newest memories only:\n%s", sys)
	}
	cur := sister.Messages[len(sister.Messages)-1].Content
	block := cur[strings.Index(cur, "[loom runtime context"):]
	if !strings.Contains(block, "- Ana's sister Lena lives in Porto.") || strings.Contains(block, "Subaru") {
		t.Errorf("sister turn's runtime block:\n%s", block)
	}
	if r := sister.Recall; r == nil || len(r.Memories) == 0 || r.Memories[0].Memory.ID != "m00" || r.Memories[0].Score <= 0 || r.Memories[0].Why != "matched sister, lives" || r.Tokens > r.Budget {
		t.Errorf("sister recall: %+v", sister.Recall)
	}
	if cur := car.Messages[len(car.Messages)-1].Content; !strings.Contains(cur, "- Ana drives a green Subaru Forester.") || strings.Contains(cur, "Porto") {
		t.Errorf("car turn:\n%s", cur)
	}
	if r := none.Recall; r == nil || r.Fallback != memory.FallbackNoTerms || len(r.Memories) == 0 || !strings.HasPrefix(r.Memories[0].Why, "priority order") {
		t.Errorf("no searchable word: %+v", none.Recall)
	}
}
