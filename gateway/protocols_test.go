package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/gateway"
	"github.com/loomctx/loom/server"
)

// On the gateway's paths, the server's own errors (an unknown route or
// workspace, a missing token) come in the protocol's shape, naming what
// is served; elsewhere they stay problem JSON.
func TestErrorsInTheProtocolsShape(t *testing.T) {
	t.Setenv("LOOM_ALLOWED_ENDPOINTS", "127.0.0.1")
	root := t.TempDir()
	up := newUpstream(t)
	for _, name := range []string{"beta", "alpha"} {
		dir := writeWorkspace(t, up.URL, "")
		if err := os.Rename(dir, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := server.New(server.Options{Root: root, Tokens: []string{"server-token"}})
	if err != nil {
		t.Fatal(err)
	}
	gateway.Mount(s, gateway.Options{})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })

	do := func(method, path string, headers ...string) (int, string, map[string]any) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(`{"model":"m","max_tokens":5,"input":"hi","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Content-Type"), body
	}
	bearer := []string{"Authorization", "Bearer server-token"}
	openaiErr := func(msg string) map[string]any {
		return map[string]any{"error": map[string]any{"message": msg, "type": "not_found_error", "param": nil, "code": "workspace_not_found"}}
	}
	anthropicErr := func(typ, msg string) map[string]any {
		return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	for _, tt := range []struct {
		method, path string
		headers      []string
		status       int
		want         map[string]any
	}{
		{"POST", "/v1/workspaces/nope/chat/completions", bearer, 404, openaiErr(`no workspace named "nope"; served: alpha, beta`)},
		{"POST", "/v1/workspaces/nope/responses", bearer, 404, openaiErr(`no workspace named "nope"; served: alpha, beta`)},
		{"GET", "/v1/workspaces/nope/models", bearer, 404, openaiErr(`no workspace named "nope"; served: alpha, beta`)},
		{"POST", "/v1/responses", bearer, 404, openaiErr(`no default workspace: this server serves a root of workspaces; use /v1/workspaces/{ws}/responses; served: alpha, beta`)},
		{"POST", "/v1/workspaces/nope/v1/messages", []string{"X-Api-Key", "server-token", "Anthropic-Version", "2023-06-01"}, 404,
			anthropicErr("not_found_error", `no workspace named "nope"; served: alpha, beta`)},
		{"POST", "/v1/messages", []string{"X-Api-Key", "wrong", "Anthropic-Version", "2023-06-01"}, 401,
			anthropicErr("authentication_error", "a valid bearer token is required")},
		{"POST", "/v1/responses", []string{"Authorization", "Bearer server-token", "Content-Type", "text/plain"}, 415, map[string]any{"error": map[string]any{
			"message": `the body must be sent as Content-Type: application/json, not "text/plain"`, "type": "invalid_request_error", "param": nil, "code": "unsupported_media_type"}}},
		{"POST", "/v1/embeddings", bearer, 404, map[string]any{"error": map[string]any{"message": "no route for POST /v1/embeddings",
			"type": "not_found_error", "param": nil, "code": "not_found"}}},
	} {
		status, ctype, body := do(tt.method, tt.path, tt.headers...)
		got, _ := json.Marshal(body)
		want, _ := json.Marshal(tt.want)
		if status != tt.status || ctype != "application/json" || string(got) != string(want) {
			t.Errorf("%s %s: %d %s %s\nwant %d %s", tt.method, tt.path, status, ctype, got, tt.status, want)
		}
	}
	// loom's own API keeps problem JSON.
	if status, ctype, body := do("POST", "/v1/workspaces/nope/render", bearer...); status != 404 || ctype != "application/problem+json" || body["code"] != "workspace_not_found" {
		t.Errorf("render on an unknown workspace: %d %s %v", status, ctype, body)
	}
	// x-api-key is the server's token for an Anthropic client.
	if status, _, body := do("GET", "/v1/workspaces/alpha/v1/models", "X-Api-Key", "server-token", "Anthropic-Version", "2023-06-01"); status != 200 || body["has_more"] != false {
		t.Errorf("models with x-api-key: %d %v", status, body)
	}
}

// store: false keeps nothing: no session, and previous_response_id to it
// is unknown.
func TestResponsesStoreFalse(t *testing.T) {
	e := setup(t, "")
	res := e.post(t, "/v1/responses", map[string]any{"model": "m", "input": "hi", "store": false}, "X-Loom-Session", "nostore")
	var out map[string]any
	json.Unmarshal([]byte(readAll(t, res)), &out)
	if res.StatusCode != 200 || out["store"] != false || out["status"] != "completed" {
		t.Fatalf("%d %v", res.StatusCode, out)
	}
	res = e.post(t, "/v1/responses", map[string]any{"model": "m", "input": "again", "previous_response_id": out["id"]})
	body := readAll(t, res)
	if res.StatusCode != 404 || !strings.Contains(body, "previous_response_id") {
		t.Errorf("previous_response_id of an unstored response: %d %s", res.StatusCode, body)
	}
	r, _ := http.Get(e.base + "/v1/workspaces/default/sessions/nostore/messages")
	var hist server.SessionMessages
	json.NewDecoder(r.Body).Decode(&hist)
	r.Body.Close()
	if len(hist.Messages) != 0 {
		t.Errorf("store: false kept %d messages", len(hist.Messages))
	}
}

// GET /v1/models: OpenAI's list, or Anthropic's when anthropic-version is
// sent; the configured model first, then the aliases.
func TestModels(t *testing.T) {
	e := setup(t, "gateway:\n  models:\n    claude-sonnet-4-5: fake-model\n    gpt-4.1: {}\n")
	get := func(headers ...string) map[string]any {
		req, _ := http.NewRequest("GET", e.base+"/v1/models", nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		return out
	}
	ids := func(out map[string]any) []string {
		var ids []string
		data, _ := out["data"].([]any)
		for _, m := range data {
			ids = append(ids, m.(map[string]any)["id"].(string))
		}
		return ids
	}
	if out := get(); out["object"] != "list" || strings.Join(ids(out), ",") != "fake-model,claude-sonnet-4-5,gpt-4.1" {
		t.Errorf("OpenAI list: %v", out)
	}
	if out := get("Anthropic-Version", "2023-06-01"); out["has_more"] != false || out["first_id"] != "fake-model" || strings.Join(ids(out), ",") != "fake-model,claude-sonnet-4-5,gpt-4.1" {
		t.Errorf("Anthropic list: %v", out)
	}
}

// Chat Completions turns go to llm.model too, unless gateway.models maps
// the client's model: a client that knows only one provider's model names
// reaches either upstream.
func TestChatCompletionsModelMapping(t *testing.T) {
	for _, pe := range protoSetups(t, aliasYAML) {
		t.Run(pe.provider, func(t *testing.T) {
			configured := map[string]string{"openai": "fake-model", "anthropic": "claude-fake"}[pe.provider]
			for client, want := range map[string]string{"gpt-4o": configured, "claude-sonnet-4-5": "fake-model-big"} {
				res := pe.post(t, "/v1/chat/completions", map[string]any{"model": client, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
				if body := readAll(t, res); res.StatusCode != 200 {
					t.Fatalf("%s: %d %s", client, res.StatusCode, body)
				}
				reqs := pe.requests()
				if got := reqs[len(reqs)-1].Body["model"]; got != want {
					t.Errorf("client model %s went upstream as %v, want %s", client, got, want)
				}
			}
		})
	}
}

// Thinking from a /v1/messages client goes back to an Anthropic upstream
// as it came: the thinking block with its signature and the
// redacted_thinking block with its data, in order, first in their turn,
// before the text and tool_use. An OpenAI-compatible upstream gets none of
// it.
func TestMessagesThinkingReplayed(t *testing.T) {
	body := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []any{
		map[string]any{"role": "user", "content": "read a.txt"},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "thinking", "thinking": "First, the file.", "signature": "sig-one"},
			map[string]any{"type": "redacted_thinking", "data": "opaque-two"},
			map[string]any{"type": "thinking", "thinking": "Then read it.", "signature": "sig-three"},
			map[string]any{"type": "text", "text": "Reading."},
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{"file_path": "a.txt"}},
		}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello"}}},
	}}
	for _, pe := range protoSetups(t, "") {
		t.Run(pe.provider, func(t *testing.T) {
			res := pe.post(t, "/v1/messages", body, "Anthropic-Version", "2023-06-01", "X-Loom-Session", "thinking-"+pe.provider)
			if out := readAll(t, res); res.StatusCode != 200 {
				t.Fatalf("%d %s", res.StatusCode, out)
			}
			reqs := pe.requests()
			sent := reqs[len(reqs)-1]
			if pe.provider == "openai" {
				for _, s := range []string{"sig-one", "opaque-two", "First, the file.", "Then read it.", `"redacted_thinking"`, `"type":"thinking"`} {
					if strings.Contains(string(sent.Raw), s) {
						t.Errorf("the OpenAI upstream got %q: %s", s, sent.Raw)
					}
				}
				return
			}
			var msgs []struct {
				Role    string           `json:"role"`
				Content []map[string]any `json:"content"`
			}
			raw, _ := json.Marshal(sent.Body["messages"])
			json.Unmarshal(raw, &msgs)
			var asst []map[string]any
			for _, m := range msgs {
				if m.Role == "assistant" {
					asst = m.Content
				}
			}
			want := []map[string]any{
				{"type": "thinking", "thinking": "First, the file.", "signature": "sig-one"},
				{"type": "redacted_thinking", "data": "opaque-two"},
				{"type": "thinking", "thinking": "Then read it.", "signature": "sig-three"},
				{"type": "text", "text": "Reading."},
				{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{"file_path": "a.txt"}},
			}
			got, _ := json.Marshal(asst)
			w, _ := json.Marshal(want)
			if string(got) != string(w) {
				t.Errorf("the assistant turn went upstream as\n%s\nwant\n%s", got, w)
			}
		})
	}
}

// GET /v1/models adds the upstream's own list (GET {base}/models on an
// OpenAI-compatible upstream, GET /v1/models on Anthropic's) after the
// configured model and the aliases, asked with loom's key and kept for a
// while; an upstream that cannot list leaves the list as it was.
func TestModelsFromUpstream(t *testing.T) {
	ids := func(t *testing.T, base string, headers ...string) []string {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/v1/models", nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 {
			t.Fatalf("%d %v", res.StatusCode, err)
		}
		var got []string
		for _, m := range out.Data {
			got = append(got, m.ID)
		}
		return got
	}
	const aliases = "gateway:\n  models:\n    claude-sonnet-4-5: {}\n"
	t.Run("openai", func(t *testing.T) {
		e := setup(t, aliases)
		e.up.modelList = `{"object":"list","data":[{"id":"up-model-b","object":"model"},{"id":"fake-model","object":"model"},{"id":"up-model-a","object":"model"},{"id":""}]}`
		for range 2 {
			if got := strings.Join(ids(t, e.base), ","); got != "fake-model,claude-sonnet-4-5,up-model-b,up-model-a" {
				t.Errorf("list: %s", got)
			}
		}
		if len(e.up.modelAsks) != 1 {
			t.Fatalf("the upstream was asked %d times, want once (the list is kept)", len(e.up.modelAsks))
		}
		if got := e.up.modelAsks[0].Header.Get("Authorization"); got != "Bearer sk-upstream-secret" {
			t.Errorf("asked with Authorization %q, want loom's key", got)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		e, up := setupAnthropic(t, aliases)
		up.modelList = `{"data":[{"type":"model","id":"claude-up-1","display_name":"Up 1","created_at":"2026-01-01T00:00:00Z"}],"has_more":false,"first_id":"claude-up-1","last_id":"claude-up-1"}`
		if got := strings.Join(ids(t, e.base, "Anthropic-Version", "2023-06-01"), ","); got != "claude-fake,claude-sonnet-4-5,claude-up-1" {
			t.Errorf("list: %s", got)
		}
		ask := up.modelAsks[0]
		if ask.Header.Get("X-Api-Key") != "sk-ant-upstream-secret" || ask.Header.Get("Anthropic-Version") == "" || ask.URL.Query().Get("limit") != "1000" {
			t.Errorf("asked as %s with headers %v", ask.URL, ask.Header)
		}
	})
	t.Run("no list", func(t *testing.T) {
		e := setup(t, aliases) // the fake answers 404
		if got := strings.Join(ids(t, e.base), ","); got != "fake-model,claude-sonnet-4-5" {
			t.Errorf("list: %s", got)
		}
	})
	// With no key of loom's own and gateway.forward_auth, the client's key
	// asks for the list, as it would send a turn; loom's own token never
	// goes.
	t.Run("forward_auth", func(t *testing.T) {
		t.Setenv("LOOM_TEST_UPSTREAM_KEY", "")
		t.Setenv("LOOM_ALLOWED_ENDPOINTS", "127.0.0.1")
		up := newUpstream(t)
		up.modelList = `{"data":[{"id":"up-model-a"}]}`
		base := forwardEnv(t, writeWorkspace(t, up.URL, "gateway:\n  forward_auth: true\n"), false, "srv-token-0123456789")
		if got := strings.Join(ids(t, base, "Authorization", "Bearer srv-token-0123456789"), ","); got != "fake-model,up-model-a" {
			t.Errorf("list: %s", got)
		}
		for i, ask := range up.modelAsks {
			if h := ask.Header.Get("Authorization") + ask.Header.Get("X-Api-Key"); strings.Contains(h, "srv-token") {
				t.Errorf("ask %d carried loom's own token: %q", i, h)
			}
		}
		// A server without tokens of its own: the client's bearer is its key.
		up2 := newUpstream(t)
		up2.modelList = `{"data":[{"id":"up-model-c"}]}`
		base2 := forwardEnv(t, writeWorkspace(t, up2.URL, "gateway:\n  forward_auth: true\n"), false)
		if got := strings.Join(ids(t, base2, "Authorization", "Bearer sk-client-own-1234"), ","); got != "fake-model,up-model-c" {
			t.Errorf("list: %s", got)
		}
		if len(up2.modelAsks) != 1 || up2.modelAsks[0].Header.Get("Authorization") != "Bearer sk-client-own-1234" {
			t.Errorf("asks %d; want one with the client's key", len(up2.modelAsks))
		}
		if len(up.modelAsks) != 1 || up.modelAsks[0].Header.Get("Authorization") != "" {
			t.Errorf("asks: %d, first with Authorization %q (want one, with no key)", len(up.modelAsks), up.modelAsks[0].Header.Get("Authorization"))
		}
	})
}
