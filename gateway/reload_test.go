package gateway_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loom.yaml edited while the server runs: the next requests follow the new
// llm: section (another endpoint and model, then another provider), a
// broken file is reported and a fixed one used again, with no restart.
func TestLLMSettingsFollowLoomYAML(t *testing.T) {
	e := setup(t, "")
	other := newUpstream(t)
	other.extractFact = "RELOADED-FACT-3k the user sails."
	ant := newAnthropicUp(t)
	write := func(yaml string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(e.dir, "loom.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ask := func() (int, string) {
		res := e.post(t, "/v1/chat/completions", map[string]any{"user": "dee", "messages": []any{map[string]any{"role": "user", "content": "I sail every weekend."}}}, "X-Loom-Session", "reload")
		body := readAll(t, res)
		return res.StatusCode, body
	}
	count := func(u *upstream) int { u.mu.Lock(); defer u.mu.Unlock(); return len(u.requests) }
	// until asks until cond holds, as the watcher's event may take a moment.
	until := func(what string, cond func(status int, body string) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			status, body := ask()
			if cond(status, body) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last answer %d %s", what, status, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if status, body := ask(); status != 200 || count(e.up) != 1 {
		t.Fatalf("first request: %d %s", status, body)
	}
	// Another endpoint and model, with extraction on.
	write(fmt.Sprintf("llm:\n  provider: openai\n  base_url: %s/v1\n  model: other-model\n  api_key_env: LOOM_TEST_UPSTREAM_KEY\n  consolidation:\n    enabled: false\n", other.URL))
	until("the new base URL", func(int, string) bool { return count(other) > 0 })
	// The client sent no model: the newly configured one is used.
	if got := other.last(t); got.Body["model"] != "other-model" {
		t.Fatalf("model %v", got.Body["model"])
	}
	before := count(e.up)
	ask()
	if count(e.up) != before {
		t.Fatal("a request still went to the old upstream")
	}
	// Extraction runs with the new settings, on the new endpoint.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, _ := http.Get(e.base + "/v1/workspaces/default/memories?user=dee")
		if strings.Contains(readAll(t, r), "RELOADED-FACT-3k") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no memory extracted through the new endpoint")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A broken loom.yaml: refused, naming the problem, not sent anywhere.
	write("llm:\n  provider: openai\n  base_url: [\n")
	until("a broken loom.yaml", func(status int, body string) bool {
		return status == http.StatusUnprocessableEntity && strings.Contains(body, "loom.yaml")
	})
	// The provider becomes Anthropic.
	write(fmt.Sprintf("llm:\n  provider: anthropic\n  base_url: %s\n  model: claude-fake\n  api_key_env: LOOM_TEST_UPSTREAM_KEY\n  consolidation:\n    enabled: false\n  extraction:\n    enabled: false\n", ant.URL))
	until("the Anthropic provider", func(status int, body string) bool {
		return status == 200 && strings.Contains(body, `"object":"chat.completion"`) && strings.Contains(body, "claude-fake")
	})
	if got := ant.last(t); got.Header.Get("X-Api-Key") != "sk-upstream-secret" || got.Body["model"] != "claude-fake" {
		t.Fatalf("anthropic request: %v %s", got.Header, got.Raw)
	}
}
