package server_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/loomctx/loom/server"
)

// FuzzDecoders sends arbitrary bodies to every route that decodes one: the
// answer is never a 500 (and never a panic, which the recovery middleware
// would turn into one).
func FuzzDecoders(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"budget": 5}`, `{"fork": {"title": "x"}}`, `{"message": "hi", "history": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}`,
		`{"message": "/greet $greet", "format": "anthropic", "cache_history": true}`, `{"text": "héllo"}`,
		`{"memories": [{"id": "m_1", "category": "personal_fact", "content": "x", "user": "", "created_at": "2026-01-01T00:00:00Z"}]}`,
		`{"category": "personal_fact", "content": "x", "supersedes": "m_1"}`, `{"history": [{"role": "tool", "tool_call_id": "a", "content": "r"}], "message": "x"}`,
		`{"tools": []}`, `{"tz": "../../../etc/passwd"}`, `{"now": "2026-13-45T99:99:99Z"}`, "\x00", `[`, `{"a":`,
	} {
		for route := range 6 {
			f.Add(uint8(route), []byte(seed))
		}
	}
	s, err := server.New(server.Options{Dir: writeWorkspace(f, f.TempDir()), MaxBodyBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	routes := []string{
		"/v1/workspaces/default/render", "/v1/workspaces/default/messages", "/v1/tokens",
		"/v1/workspaces/default/memories", "/v1/workspaces/default/memories/import", "/v1/workspaces/default/skills/greet/expand",
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := routes[int(route)%len(routes)]
		req := httptest.NewRequest("POST", "http://127.0.0.1"+path, bytes.NewReader(body)) // a loopback Host, or the guard answers 421
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST %s %q: %d %s", path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("POST %s %q: %d without a problem body", path, body, rec.Code)
		}
		_ = http.StatusOK
	})
}
