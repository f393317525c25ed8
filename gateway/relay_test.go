package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/gateway"
	"github.com/loomctx/loom/server"
)

// An upstream error body that echoes the key, or any credential, reaches
// the client masked, on both wires; the upstream's cookies, auth
// challenges, server identity and per-connection headers do not reach it.
func TestRelayedErrorsCarryNoSecret(t *testing.T) {
	echo := func(key string) func(w http.ResponseWriter, body map[string]any) {
		return func(w http.ResponseWriter, body map[string]any) {
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Set-Cookie", "upstream_session=abc; Path=/")
			h.Set("Www-Authenticate", `Bearer realm="upstream"`)
			h.Set("Server", "upstream-httpd/9.9")
			h.Set("X-Powered-By", "secret-stack")
			h.Set("Connection", "X-Upstream-Hop")
			h.Set("X-Upstream-Hop", "1")
			h.Set("X-Ratelimit-Remaining-Requests", "41")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. You sent Authorization: Bearer %s and x-api-key: other-echoed-key-77","type":"invalid_request_error"}}`, key, key)
		}
	}
	check := func(t *testing.T, res *http.Response, key string) {
		t.Helper()
		body := readAll(t, res)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Incorrect API key provided") {
			t.Fatalf("status %d body %s", res.StatusCode, body)
		}
		for _, secret := range []string{key, "other-echoed-key-77"} {
			if strings.Contains(body, secret) {
				t.Errorf("the relayed error body holds %q: %s", secret, body)
			}
		}
		if !strings.Contains(body, "REDACTED") {
			t.Errorf("nothing masked in %s", body)
		}
		for _, h := range []string{"Set-Cookie", "Www-Authenticate", "Server", "X-Powered-By", "X-Upstream-Hop"} {
			if v := res.Header.Get(h); v != "" {
				t.Errorf("upstream header %s relayed: %q", h, v)
			}
		}
	}
	t.Run("openai", func(t *testing.T) {
		e := setup(t, "")
		e.up.setReply(echo("sk-upstream-secret"))
		res := e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		if res.Header.Get("X-Ratelimit-Remaining-Requests") != "41" {
			t.Errorf("an ordinary upstream header was not relayed: %v", res.Header)
		}
		check(t, res, "sk-upstream-secret")
	})
	t.Run("anthropic", func(t *testing.T) {
		e, up := setupAnthropic(t, "")
		up.setReply(echo("sk-ant-upstream-secret"))
		for _, stream := range []bool{false, true} {
			res := e.post(t, "/v1/chat/completions", map[string]any{"stream": stream, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
			check(t, res, "sk-ant-upstream-secret")
		}
	})
}

// forwardEnv serves the workspaces in dir (a root when root is set) with
// the server tokens given, behind the gateway.
func forwardEnv(t *testing.T, dir string, root bool, tokens ...string) string {
	t.Helper()
	opts := server.Options{Dir: dir, Tokens: tokens}
	if root {
		opts = server.Options{Root: dir, Tokens: tokens}
	}
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	gateway.Mount(s, gateway.Options{Now: func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts.URL
}

func chat(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, readAll(t, res)
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.requests)
}

// gateway.forward_auth sends a client's key only where the operator lets
// keys go, and never the server's own bearer token; a workspace's
// loom.yaml cannot widen either.
func TestForwardAuthRule(t *testing.T) {
	for _, k := range []string{"LOOM_LLM_BASE_URL", "LOOM_LLM_API_KEY", "LOOM_LLM_MODEL", "LOOM_LLM_PROVIDER", "LOOM_MEMORY_DB", "LOOM_ALLOWED_ENDPOINTS"} {
		t.Setenv(k, "")
	}
	t.Setenv("LOOM_TEST_UPSTREAM_KEY", "") // loom has no key of its own
	const forward = "gateway:\n  forward_auth: true\n"

	t.Run("endpoint not allowed", func(t *testing.T) {
		up := newUpstream(t)
		base := forwardEnv(t, writeWorkspace(t, up.URL, forward), false)
		status, body := chat(t, base+"/v1/chat/completions", "sk-client-own-1234")
		if status != http.StatusForbidden || !strings.Contains(body, "forward_auth_refused") || !strings.Contains(body, "LOOM_ALLOWED_ENDPOINTS") {
			t.Fatalf("status %d body %s", status, body)
		}
		if strings.Contains(body, "sk-client-own-1234") || up.count() != 0 {
			t.Fatalf("the key went out or was echoed: %d requests, body %s", up.count(), body)
		}
	})
	t.Run("endpoint allowed", func(t *testing.T) {
		up := newUpstream(t)
		t.Setenv("LOOM_ALLOWED_ENDPOINTS", strings.TrimPrefix(up.URL, "http://"))
		base := forwardEnv(t, writeWorkspace(t, up.URL, forward), false)
		if status, body := chat(t, base+"/v1/chat/completions", "sk-client-own-1234"); status != 200 {
			t.Fatalf("status %d body %s", status, body)
		}
		if got := up.last(t).Header.Get("Authorization"); got != "Bearer sk-client-own-1234" {
			t.Fatalf("upstream Authorization %q", got)
		}
	})
	t.Run("LOOM_LLM_BASE_URL", func(t *testing.T) {
		up := newUpstream(t)
		t.Setenv("LOOM_LLM_BASE_URL", up.URL+"/v1")
		base := forwardEnv(t, writeWorkspace(t, up.URL, forward), false)
		if status, body := chat(t, base+"/v1/chat/completions", "sk-client-own-1234"); status != 200 {
			t.Fatalf("status %d body %s", status, body)
		}
		if got := up.last(t).Header.Get("Authorization"); got != "Bearer sk-client-own-1234" {
			t.Fatalf("upstream Authorization %q", got)
		}
	})
	t.Run("server token", func(t *testing.T) {
		up := newUpstream(t)
		t.Setenv("LOOM_ALLOWED_ENDPOINTS", "127.0.0.1") // even where keys may go
		base := forwardEnv(t, writeWorkspace(t, up.URL, forward), false, "srv-token-0123456789")
		if status, body := chat(t, base+"/v1/chat/completions", "srv-token-0123456789"); status != 200 {
			t.Fatalf("status %d body %s", status, body)
		}
		if got := up.last(t).Header.Get("Authorization"); got != "" {
			t.Fatalf("the server's own token went upstream as %q", got)
		}
	})
	t.Run("hostile workspace under --root", func(t *testing.T) {
		good, evil := newUpstream(t), newUpstream(t)
		t.Setenv("LOOM_ALLOWED_ENDPOINTS", strings.TrimPrefix(good.URL, "http://"))
		root := t.TempDir()
		for name, up := range map[string]*upstream{"good": good, "evil": evil} {
			if err := os.Rename(writeWorkspace(t, up.URL, forward), filepath.Join(root, name)); err != nil {
				t.Fatal(err)
			}
		}
		base := forwardEnv(t, root, true, "srv-token-0123456789")
		if status, body := chat(t, base+"/v1/workspaces/evil/chat/completions", "srv-token-0123456789"); status != 200 {
			t.Fatalf("evil workspace with the server token: %d %s", status, body)
		}
		if status, body := chat(t, base+"/v1/workspaces/good/chat/completions", "srv-token-0123456789"); status != 200 {
			t.Fatalf("good workspace: %d %s", status, body)
		}
		if got := evil.last(t).Header.Get("Authorization"); got != "" {
			t.Fatalf("the hostile workspace's endpoint got Authorization %q", got)
		}
		if got := good.last(t).Header.Get("Authorization"); got != "" {
			t.Fatalf("the allowed endpoint got the server's token %q", got)
		}
	})
	t.Run("hostile workspace, client key", func(t *testing.T) {
		good, evil := newUpstream(t), newUpstream(t)
		t.Setenv("LOOM_ALLOWED_ENDPOINTS", strings.TrimPrefix(good.URL, "http://"))
		root := t.TempDir()
		for name, up := range map[string]*upstream{"good": good, "evil": evil} {
			if err := os.Rename(writeWorkspace(t, up.URL, forward), filepath.Join(root, name)); err != nil {
				t.Fatal(err)
			}
		}
		base := forwardEnv(t, root, true)
		if status, body := chat(t, base+"/v1/workspaces/evil/chat/completions", "sk-client-own-1234"); status != http.StatusForbidden {
			t.Fatalf("evil workspace: %d %s", status, body)
		}
		if evil.count() != 0 {
			t.Fatal("the hostile workspace's endpoint was called")
		}
		if status, body := chat(t, base+"/v1/workspaces/good/chat/completions", "sk-client-own-1234"); status != 200 {
			t.Fatalf("good workspace: %d %s", status, body)
		}
		if got := good.last(t).Header.Get("Authorization"); got != "Bearer sk-client-own-1234" {
			t.Fatalf("the allowed endpoint got %q", got)
		}
	})
}

// A streamed OpenAI-wire reply past llm.max_reply_bytes stops being
// relayed, as on the Anthropic wire, and the session keeps the reply up
// to the bound, marked cut; a whole reply is relayed but saved the same
// way.
func TestReplyBoundedByMaxReplyBytes(t *testing.T) {
	const limit = 4096
	e := setup(t, fmt.Sprintf("  max_reply_bytes: %d\n", limit))
	// writeWorkspace puts extra after the llm section's last line, inside it.
	if yaml, _ := os.ReadFile(filepath.Join(e.dir, "loom.yaml")); !bytes.Contains(yaml, []byte("max_reply_bytes")) {
		t.Fatalf("loom.yaml: %s", yaml)
	}
	piece := strings.Repeat("x", 100)
	pieces := make([]string, 400) // 40,000 bytes of text, ten times the bound
	for i := range pieces {
		pieces[i] = piece
	}
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) {
		writeStream(w, streamChunks(pieces...), 0)
	})
	res := e.post(t, "/v1/chat/completions", map[string]any{"stream": true, "messages": []any{map[string]any{"role": "user", "content": "go"}}}, "X-Loom-Session", "long-s")
	got := readAll(t, res)
	if res.StatusCode != 200 || strings.Contains(got, "[DONE]") {
		t.Fatalf("status %d, stream ended with [DONE]: the bound was not applied", res.StatusCode)
	}
	if relayed := strings.Count(got, piece); relayed >= len(pieces) || relayed < limit/len(piece) {
		t.Fatalf("relayed %d of %d pieces", relayed, len(pieces))
	}
	checkSaved := func(id string) {
		t.Helper()
		hist := sessionMessagesN(t, e, id, 2)
		if len(hist.Messages) != 2 {
			t.Fatalf("saved %d messages", len(hist.Messages))
		}
		reply := hist.Messages[1]
		var reason string
		json.Unmarshal(reply.Extra()["loom_cut"], &reason)
		if len(reply.Content.Text) != limit || strings.Trim(reply.Content.Text, "x") != "" || !strings.Contains(reason, "max_reply_bytes") {
			t.Fatalf("saved %d bytes, cut %q", len(reply.Content.Text), reason)
		}
	}
	checkSaved("long-s")

	whole := strings.Repeat("y", 10*limit)
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) { writeCompletion(w, whole) })
	res = e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}, "X-Loom-Session", "long-w")
	if got := readAll(t, res); res.StatusCode != 200 || got != completionBody(whole) {
		t.Fatalf("whole reply under the body bound not relayed as sent: %d", res.StatusCode)
	}
	hist := sessionMessagesN(t, e, "long-w", 2)
	if reply := hist.Messages[1]; len(reply.Content.Text) != limit || reply.Extra()["loom_cut"] == nil {
		t.Fatalf("saved %d bytes of a whole reply, cut %s", len(reply.Content.Text), reply.Extra()["loom_cut"])
	}

	// Past the bound for a whole reply (4 times the limit and 1 MiB) the
	// gateway answers 502 instead of holding it.
	huge := strings.Repeat("z", 4*limit+1<<20)
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) { writeCompletion(w, huge) })
	res = e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}})
	if got := readAll(t, res); res.StatusCode != http.StatusBadGateway || !strings.Contains(got, "reply_too_large") {
		t.Fatalf("oversized whole reply: %d %.200s", res.StatusCode, got)
	}
}

// A 32 MiB streamed reply costs the gateway in proportion to what the bound
// keeps, not to what the upstream sends: under the default
// llm.max_reply_bytes (1 MiB) the relay stops after some 2 MB, and the
// request allocates about 17 MiB more in all than one with a two-word reply
// (total allocation, an upper bound on the peak, of the gateway, the fake
// upstream and the client together; the issue measured a 206 MiB peak per
// such stream). The test fails past 32 MiB.
func TestLongStreamMemory(t *testing.T) {
	e := setup(t, "")
	piece := strings.Repeat("w", 4<<10)
	pieces := make([]string, 8<<10) // 32 MiB of text
	for i := range pieces {
		pieces[i] = piece
	}
	long, short := streamChunks(pieces...), streamChunks("hi ", "there")
	body := []byte(`{"stream":true,"messages":[{"role":"user","content":"go"}]}`)
	request := func(chunks []string, session string) (relayed int64, alloc uint64) {
		e.up.setReply(func(w http.ResponseWriter, body map[string]any) { writeStream(w, chunks, 0) })
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		res := e.post(t, "/v1/chat/completions", body, "X-Loom-Session", session)
		relayed, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		runtime.ReadMemStats(&m1)
		sessionMessagesN(t, e, session, 2) // the save, after the reply, is not counted
		return relayed, m1.TotalAlloc - m0.TotalAlloc
	}
	request(short, "warm") // the prompt's first render
	_, base := request(short, "short")
	n, alloc := request(long, "long")
	t.Logf("relayed %d bytes of a 32 MiB stream; the request allocated %.1f MiB, %.1f MiB more than a two-word reply's",
		n, float64(alloc)/(1<<20), float64(alloc-base)/(1<<20))
	if n > 4<<20 || alloc-base > 32<<20 {
		t.Errorf("relayed %d bytes, allocated %d MiB more than a short reply", n, (alloc-base)>>20)
	}
}
