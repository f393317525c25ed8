package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/server"
)

// modelWorkspace is a test workspace whose loom.yaml points at a fake
// model endpoint that answers chat turns with reply and extractions with
// one profile memory.
func modelWorkspace(t *testing.T, reply, fact string) (string, *llmtest.Server) {
	t.Helper()
	fake := llmtest.New(t, llmtest.OpenAI)
	fake.Default = func(r llmtest.Request) llmtest.Reply {
		if r.Kind == "extract" {
			return llmtest.Reply{Text: fmt.Sprintf(`{"user_instructions": [], "user_profile": [{"content": %q, "supersedes_id": ""}]}`, fact)}
		}
		return llmtest.Reply{Text: reply}
	}
	dir := writeWorkspace(t, t.TempDir())
	yaml := fmt.Sprintf("llm:\n  provider: openai\n  base_url: %s/v1\n  model: gpt-4o-mini\n  consolidation:\n    enabled: false\n", fake.URL)
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"LOOM_LLM_BASE_URL", "LOOM_LLM_API_KEY", "LOOM_LLM_MODEL", "LOOM_LLM_PROVIDER"} {
		t.Setenv(k, "")
	}
	return dir, fake
}

func TestTurn(t *testing.T) {
	dir, fake := modelWorkspace(t, "Hello Ann, noted.", "The user prefers green tea.")
	s, c := newServer(t, server.Options{Dir: dir})
	r := c.do("POST", "/v1/workspaces/default/sessions/chat-1/turns", map[string]any{
		"message": "Hi, I am Ann and I always drink green tea in the morning.", "user": "ann", "channel": "slack"})
	if r.Status != 200 {
		t.Fatalf("turn: %d %s", r.Status, r.Body)
	}
	var out server.TurnResponse
	r.decode(t, &out)
	if out.Reply != "Hello Ann, noted." || !out.Saved || out.Build.Prefix.SHA256 == "" {
		t.Fatalf("turn: %+v", out)
	}
	var chat []llmtest.Request
	for _, q := range fake.Requests() {
		if q.Kind == "chat" {
			chat = append(chat, q)
		}
	}
	if len(chat) != 1 {
		t.Fatalf("model got %d chat requests", len(chat))
	}
	msgs := chat[0].JSON["messages"].([]any)
	sys := fmt.Sprint(msgs[0].(map[string]any)["content"])
	last := fmt.Sprint(msgs[len(msgs)-1].(map[string]any)["content"])
	if !strings.Contains(sys, "MARKER-AGENTS-7f3") || !strings.Contains(last, "green tea") || !strings.Contains(last, "chat-1") {
		t.Fatalf("model saw system %.200q, last %q", sys, last)
	}
	// The turn is in the session.
	var hist server.SessionMessages
	c.do("GET", "/v1/workspaces/default/sessions/chat-1/messages", nil).decode(t, &hist)
	if len(hist.Messages) != 2 {
		t.Fatalf("session holds %d messages", len(hist.Messages))
	}
	// Extraction ran in the background and wrote the user's memory.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list server.MemoryList
		c.do("GET", "/v1/workspaces/default/memories?user=ann", nil).decode(t, &list)
		if len(list.Memories) == 1 && list.Memories[0].Content == "The user prefers green tea." {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no extracted memory: %+v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The job counts as done only after its memory is written: wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := http.Get(c.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		var m bytes.Buffer
		m.ReadFrom(res.Body)
		res.Body.Close()
		if strings.Contains(m.String(), `loom_extract_done_total{workspace="default"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack the extraction queue:\n%s", grepLines(m.String(), "extract"))
		}
	}
	_ = s
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestTurnStream(t *testing.T) {
	dir, _ := modelWorkspace(t, "one two three four", "x")
	_, c := newServer(t, server.Options{Dir: dir})
	body, _ := json.Marshal(map[string]any{"message": "count please", "stream": true})
	req, _ := http.NewRequest("POST", c.base+"/v1/workspaces/default/sessions/s2/turns", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", res.Header.Get("Content-Type"))
	}
	var deltas strings.Builder
	var done server.TurnResponse
	sc := bufio.NewScanner(res.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch event {
			case "delta":
				var d struct{ Text string }
				json.Unmarshal(data, &d)
				deltas.WriteString(d.Text)
			case "done":
				json.Unmarshal(data, &done)
			default:
				t.Fatalf("event %q: %s", event, data)
			}
		}
	}
	if deltas.String() != "one two three four" || done.Reply != "one two three four" || !done.Saved {
		t.Fatalf("deltas %q, done %+v", deltas.String(), done)
	}
}

func TestTurnWithoutModel(t *testing.T) {
	for _, k := range []string{"LOOM_LLM_BASE_URL", "LOOM_LLM_API_KEY", "LOOM_LLM_MODEL", "LOOM_LLM_PROVIDER"} {
		t.Setenv(k, "")
	}
	_, c := newServer(t, server.Options{})
	r := c.do("POST", "/v1/workspaces/default/sessions/s1/turns", map[string]any{"message": "hi"})
	if r.Status != 503 || r.problem(t).Code != "llm_not_configured" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	for _, id := range []string{".hidden", "a%2fb", strings.Repeat("x", 129)} {
		r := c.do("POST", "/v1/workspaces/default/sessions/"+id+"/turns", map[string]any{"message": "hi"})
		if r.Status != 400 || r.problem(t).Field != "id" {
			t.Errorf("id %q: %d %s", id, r.Status, r.Body)
		}
	}
}

func TestMessagesFromSession(t *testing.T) {
	dir, _ := modelWorkspace(t, "Noted: blue.", "x")
	_, c := newServer(t, server.Options{Dir: dir})
	c.do("POST", "/v1/workspaces/default/sessions/s9/turns", map[string]any{"message": "My favourite colour is blue."})
	r := c.do("POST", "/v1/workspaces/default/messages", map[string]any{"message": "and now?", "session_id": "s9", "format": "json"})
	var out struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	r.decode(t, &out)
	if len(out.Messages) != 4 || fmt.Sprint(out.Messages[1].Content) != "My favourite colour is blue." || fmt.Sprint(out.Messages[2].Content) != "Noted: blue." {
		t.Fatalf("history from the session: %s", r.Body)
	}
	if r := c.do("POST", "/v1/workspaces/default/messages", map[string]any{"message": "x", "session_id": "s9", "history": []any{map[string]any{"role": "user", "content": "a"}}}); r.Status != 400 {
		t.Fatalf("both: %d", r.Status)
	}
}
