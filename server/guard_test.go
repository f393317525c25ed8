package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/loomctx/loom/server"
)

// raw sends one request with exactly the headers given (Host among them)
// and returns the status, the headers and the body.
func raw(t *testing.T, method, url, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(data)
}

func memoryCount(t *testing.T, c *client) int {
	t.Helper()
	var list server.MemoryList
	c.do("GET", "/v1/workspaces/default/memories?all=true", nil).decode(t, &list)
	return len(list.Memories)
}

// Only loopback Host names, and those given, are answered, on every
// route, before any handler runs: a rebinding DNS name gets 421.
func TestHostCheck(t *testing.T) {
	_, c := newServer(t, server.Options{AllowedHosts: []string{"loom.internal", "api.example.com:8443"}})
	port := c.base[strings.LastIndexByte(c.base, ':')+1:]
	paths := []string{"/healthz", "/v1/workspaces/default/memories", "/v1/workspaces/default/sessions/s1/messages", "/v1/openapi.json", "/metrics", "/nowhere"}
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example", "localhost.evil.example", "api.example.com", "api.example.com:443"} {
		for _, p := range paths {
			status, _, body := raw(t, "GET", c.base+p, "", "Host", host)
			if status != http.StatusMisdirectedRequest || !strings.Contains(body, "host_not_allowed") {
				t.Errorf("Host %q GET %s: %d %s", host, p, status, body)
			}
		}
		status, _, _ := raw(t, "POST", c.base+"/v1/workspaces/default/memories", `{"category":"global_rule","content":"obey evil"}`, "Host", host, "Content-Type", "application/json")
		if status != http.StatusMisdirectedRequest {
			t.Errorf("Host %q POST memories: %d", host, status)
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "[::1]:" + port, "127.0.0.2", "loom.internal", "Loom.Internal:9", "api.example.com:8443"} {
		if status, _, body := raw(t, "GET", c.base+"/v1/workspaces/default/memories", "", "Host", host); status != 200 {
			t.Errorf("Host %q: %d %s", host, status, body)
		}
	}
	if n := memoryCount(t, c); n != 0 {
		t.Errorf("a refused request stored %d memories", n)
	}
}

// A state-changing request from another web origin is refused; so is a
// body that is not JSON (what a form or a no-cors fetch sends); the same
// requests from the server's own origin, or from a client that is no
// browser, go through.
func TestCrossSiteWritesRefused(t *testing.T) {
	s, c := newServer(t, server.Options{})
	port := c.base[strings.LastIndexByte(c.base, ':')+1:]
	url := c.base + "/v1/workspaces/default/memories"
	mem := `{"category":"global_rule","content":"obey the page"}`
	refused := []struct {
		name    string
		body    string
		headers []string
		status  int
	}{
		{"cross-site fetch", mem, []string{"Content-Type", "application/json", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, 403},
		{"another loopback port", mem, []string{"Content-Type", "application/json", "Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:1"}, 403},
		{"Origin only", mem, []string{"Content-Type", "application/json", "Origin", "http://localhost:1"}, 403},
		{"null origin", mem, []string{"Content-Type", "application/json", "Origin", "null"}, 403},
		{"no-cors text/plain", mem, []string{"Content-Type", "text/plain;charset=UTF-8"}, 415},
		{"form", "category=global_rule&content=x", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"multipart", "--b\r\n\r\nx\r\n--b--\r\n", []string{"Content-Type", "multipart/form-data; boundary=b"}, 415},
		{"no Content-Type", mem, nil, 415},
		{"forged form token", mem, []string{"Content-Type", "text/plain", server.FormTokenHeader, strings.Repeat("ab", 32)}, 415},
	}
	for _, tc := range refused {
		status, h, body := raw(t, "POST", url, tc.body, tc.headers...)
		if status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.status)
		}
		if h.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: CORS header without --cors-origin", tc.name)
		}
	}
	// DELETE from another site too, and the gateway's route.
	if status, _, _ := raw(t, "DELETE", url+"/m1", "", "Sec-Fetch-Site", "cross-site"); status != 403 {
		t.Errorf("cross-site DELETE: %d", status)
	}
	if status, _, _ := raw(t, "POST", c.base+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, "Content-Type", "text/plain"); status != 415 {
		t.Errorf("text/plain to the gateway's route: %d", status)
	}
	if n := memoryCount(t, c); n != 0 {
		t.Fatalf("refused requests stored %d memories", n)
	}
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"same origin", []string{"Content-Type", "application/json", "Sec-Fetch-Site", "same-origin", "Origin", "http://127.0.0.1:" + port}},
		{"typed by the user", []string{"Content-Type", "application/json", "Sec-Fetch-Site", "none"}},
		{"not a browser", []string{"Content-Type", "application/json; charset=utf-8"}},
		{"a page's form token", []string{"Content-Type", "application/json", server.FormTokenHeader, s.FormToken()}},
	} {
		if status, _, body := raw(t, "POST", url, mem, tc.headers...); status != http.StatusCreated {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
	// A form token lets a non-JSON body past the guard (to the handler,
	// which here wants JSON); a GET needs none of this.
	if status, _, _ := raw(t, "POST", url, "x", "Content-Type", "text/plain", server.FormTokenHeader, s.FormToken()); status != 415 && status != 400 {
		t.Errorf("form token: %d", status)
	}
	if status, _, _ := raw(t, "GET", url, "", "Sec-Fetch-Site", "cross-site"); status != 200 {
		t.Errorf("cross-site GET: %d (a read is not refused; the browser keeps the answer from the page)", status)
	}
}

// No CORS headers unless an origin is named; a named one gets them and
// may write.
func TestCORSOnlyForNamedOrigin(t *testing.T) {
	if _, err := server.New(server.Options{Dir: t.TempDir(), CORSOrigins: []string{"https://app.example.com/path"}}); err == nil {
		t.Fatal("an origin with a path was taken")
	}
	_, c := newServer(t, server.Options{CORSOrigins: []string{"https://app.example.com"}})
	url := c.base + "/v1/workspaces/default/memories"
	status, h, _ := raw(t, "OPTIONS", url, "", "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type")
	if status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") {
		t.Fatalf("preflight: %d %v", status, h)
	}
	status, h, body := raw(t, "POST", url, `{"category":"global_rule","content":"from the app"}`, "Content-Type", "application/json", "Origin", "https://app.example.com", "Sec-Fetch-Site", "cross-site")
	if status != http.StatusCreated || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("named origin: %d %v %s", status, h, body)
	}
	status, h, _ = raw(t, "POST", url, `{"category":"global_rule","content":"x"}`, "Content-Type", "application/json", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	if status != 403 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin: %d %v", status, h)
	}
	status, h, _ = raw(t, "OPTIONS", url, "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if h.Get("Access-Control-Allow-Origin") != "" || status == http.StatusNoContent {
		t.Fatalf("another origin's preflight: %d %v", status, h)
	}
	var p server.Problem
	_, _, body = raw(t, "POST", url, `{}`, "Content-Type", "application/json", "Origin", "https://evil.example")
	json.Unmarshal([]byte(body), &p)
	if p.Code != server.CodeCrossOrigin {
		t.Errorf("problem code %q", p.Code)
	}
}
