package gateway_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Turns saved through the gateway grow the session past the consolidation
// threshold; the model's save_memory call is then written to
// memory/MEMORY.md and memory/HISTORY.md, the session's pointer moves, and
// the next request's system prompt holds the new memory.
func TestConsolidationThroughGateway(t *testing.T) {
	e := setup(t, "")
	yaml := fmt.Sprintf("llm:\n  provider: openai\n  base_url: %s/v1\n  model: fake-model\n  api_key_env: LOOM_TEST_UPSTREAM_KEY\n"+
		"  extraction:\n    enabled: false\n  consolidation:\n    enabled: true\n    threshold_tokens: 120\n", e.up.URL)
	if err := os.WriteFile(filepath.Join(e.dir, "loom.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{
		"history_entry": "[2026-03-04 05:06] CONSOLIDATED-ENTRY-5q: the user planned a trip to Bergen.",
		"memory_update": "# Memory\n\nCONSOLIDATED-MEMORY-5q: the user is planning a trip to Bergen in May.\n",
	})
	e.up.mu.Lock()
	e.up.consolidateArgs = string(args)
	e.up.mu.Unlock()

	long := strings.Repeat("I am planning a long trip to Bergen in May and want to see the fjords. ", 4)
	ask := func(i int) {
		res := e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{
			map[string]any{"role": "user", "content": fmt.Sprintf("turn %d: %s", i, long)}}}, "X-Loom-Session", "cons")
		if body := readAll(t, res); res.StatusCode != 200 {
			t.Fatalf("turn %d: %d %s", i, res.StatusCode, body)
		}
	}
	mem, hist := filepath.Join(e.dir, "memory", "MEMORY.md"), filepath.Join(e.dir, "memory", "HISTORY.md")
	ask(0)
	// One turn is under the threshold: nothing is consolidated yet.
	if h := sessionMessages(t, e, "cons"); len(h.Messages) != 2 || h.LastConsolidated != 0 {
		t.Fatalf("after one turn: %d messages, pointer %d", len(h.Messages), h.LastConsolidated)
	}
	if _, err := os.Stat(mem); err == nil {
		t.Fatal("MEMORY.md written under the threshold")
	}
	for i := 1; i < 4; i++ {
		ask(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, _ := os.ReadFile(mem)
		h, _ := os.ReadFile(hist)
		if strings.Contains(string(m), "CONSOLIDATED-MEMORY-5q") && strings.Contains(string(h), "CONSOLIDATED-ENTRY-5q") {
			break
		}
		if time.Now().After(deadline) {
			e.up.mu.Lock()
			n := e.up.consolidations
			e.up.mu.Unlock()
			t.Fatalf("no consolidation written (%d calls); MEMORY.md %q HISTORY.md %q", n, m, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var sess struct {
		LastConsolidated int `json:"last_consolidated"`
		Messages         []any
	}
	deadline = time.Now().Add(5 * time.Second)
	for (sess.LastConsolidated == 0 || len(sess.Messages) < 8) && time.Now().Before(deadline) {
		h := sessionMessages(t, e, "cons")
		sess.LastConsolidated, sess.Messages = h.LastConsolidated, make([]any, len(h.Messages))
		time.Sleep(20 * time.Millisecond)
	}
	if sess.LastConsolidated <= 0 || sess.LastConsolidated >= len(sess.Messages) || len(sess.Messages) != 8 {
		t.Fatalf("session pointer %d of %d messages", sess.LastConsolidated, len(sess.Messages))
	}
	// The consolidated memory is in the next request's prompt.
	ask(4)
	if sys := msgText(e.up.last(t).Body["messages"].([]any)[0]); !strings.Contains(sys, "CONSOLIDATED-MEMORY-5q") {
		t.Fatalf("the next system prompt lacks MEMORY.md:\n%.500s", sys)
	}
}
