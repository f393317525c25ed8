package gateway_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A turn that cannot be stored is not acknowledged: the non-streamed
// request gets an error in OpenAI's shape instead of the reply, and the
// stream relays the chunks but ends with an error event, not [DONE]. The
// session file is made a folder, so every append fails.
func TestUnstoredTurnIsNotAcknowledged(t *testing.T) {
	e := setup(t, "")
	if err := os.MkdirAll(filepath.Join(e.dir, ".loom", "sessions", "broken.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	res := e.post(t, "/v1/chat/completions", map[string]any{"messages": msgs}, "X-Loom-Session", "broken")
	body := readAll(t, res)
	if res.StatusCode == 200 || !strings.Contains(body, `"error":{`) || strings.Contains(body, "chat.completion") {
		t.Fatalf("unstored turn answered %d %s", res.StatusCode, body)
	}

	chunks := streamChunks("Hel", "lo")
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) { writeStream(w, chunks, time.Millisecond) })
	res = e.post(t, "/v1/chat/completions", map[string]any{"stream": true, "messages": msgs}, "X-Loom-Session", "broken")
	body = readAll(t, res)
	if !strings.Contains(body, `"content":"Hel"`) || strings.Contains(body, "[DONE]") || !strings.Contains(body, `data: {"error":{`) {
		t.Fatalf("unstored streamed turn:\n%s", body)
	}

	// The same stream on a session that stores ends with [DONE], after
	// the turn is in the session.
	res = e.post(t, "/v1/chat/completions", map[string]any{"stream": true, "messages": msgs}, "X-Loom-Session", "fine")
	body = readAll(t, res)
	if !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Count(body, "[DONE]") != 1 || strings.Contains(body, `"error"`) {
		t.Fatalf("stored streamed turn:\n%s", body)
	}
	sessionMessagesN(t, e, "fine", 2)
}

// A client that retries a turn with the same Idempotency-Key, or resends
// the same conversation with its history, has it stored once.
func TestRetriedTurnStoredOnce(t *testing.T) {
	e := setup(t, "")
	first := []any{map[string]any{"role": "user", "content": "one"}}
	for range 2 {
		res := e.post(t, "/v1/chat/completions", map[string]any{"messages": first}, "X-Loom-Session", "retry", "Idempotency-Key", "k-1")
		if body := readAll(t, res); res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	}
	second := append(first, map[string]any{"role": "assistant", "content": "fake reply"}, map[string]any{"role": "user", "content": "two"})
	for range 2 {
		res := e.post(t, "/v1/chat/completions", map[string]any{"messages": second}, "X-Loom-Session", "retry")
		if body := readAll(t, res); res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	}
	hist := sessionMessagesN(t, e, "retry", 4)
	var texts []string
	for _, m := range hist.Messages {
		texts = append(texts, string(m.Role)+":"+m.Content.String())
	}
	if len(texts) != 4 || texts[0] != "user:one" || texts[2] != "user:two" {
		t.Fatalf("stored %q", texts)
	}
}
