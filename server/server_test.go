package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomctx/loom/server"
)

type renderBody struct {
	Prompt string `json:"prompt"`
	Report struct {
		Tokens   int `json:"tokens"`
		Sections []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"sections"`
	} `json:"report"`
	OverBudget string `json:"over_budget"`
}

func TestRenderETag(t *testing.T) {
	_, c := newServer(t, server.Options{})
	res := c.do("POST", "/v1/workspaces/default/render", map[string]any{"channel": "slack"})
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
	var b renderBody
	res.decode(t, &b)
	if !strings.Contains(b.Prompt, "MARKER-AGENTS-7f3") || b.Report.Tokens == 0 || len(b.Report.Sections) == 0 {
		t.Fatalf("render lacks the workspace text or report: %.300s", res.Body)
	}
	etag := res.Header.Get("ETag")
	if len(etag) != 66 || etag[0] != '"' {
		t.Fatalf("ETag %q is not a quoted sha256", etag)
	}
	again := c.do("POST", "/v1/workspaces/default/render", map[string]any{"channel": "slack"}, "If-None-Match", etag)
	if again.Status != http.StatusNotModified || len(again.Body) != 0 || again.Header.Get("ETag") != etag {
		t.Fatalf("If-None-Match: status %d, etag %q", again.Status, again.Header.Get("ETag"))
	}
	other := c.do("POST", "/v1/workspaces/default/render", map[string]any{"channel": "slack"}, "If-None-Match", `"nope", W/"other"`)
	if other.Status != 200 {
		t.Fatalf("a stale ETag got %d", other.Status)
	}
	// No body at all renders with the defaults.
	if r := c.do("POST", "/v1/workspaces/default/render", nil); r.Status != 200 {
		t.Fatalf("empty body: %d %s", r.Status, r.Body)
	}
}

func TestRenderMatchesLibrary(t *testing.T) {
	// The server's prompt is the library's, byte for byte.
	dir := writeWorkspace(t, t.TempDir())
	_, c := newServer(t, server.Options{Dir: dir})
	res := c.do("POST", "/v1/workspaces/default/render", map[string]any{"now": "2026-01-02T03:04:05Z", "preset": "analyst"})
	var b renderBody
	res.decode(t, &b)
	want := renderDirect(t, dir)
	if b.Prompt != want {
		t.Fatalf("server prompt differs from prompt.Render's")
	}
}

func TestRenderBadInput(t *testing.T) {
	_, c := newServer(t, server.Options{})
	cases := []struct {
		body        string
		status      int
		code, field string
	}{
		{`{"budget": "big"}`, 400, "invalid_field", "budget"},
		{`{"colour": 1}`, 400, "unknown_field", "colour"},
		{`{"preset": "poet"}`, 400, "invalid_field", "preset"},
		{`{"encoding": "o200k_base", "model": "gpt-4o"}`, 400, "invalid_field", "encoding"},
		{`{"now": "yesterday"}`, 400, "invalid_field", "now"},
		{`{"tz": "Mars/Olympus"}`, 400, "invalid_field", "tz"},
		{`{"budget": -5}`, 400, "invalid_field", "budget"},
		{`{"channel": "../../etc"}`, 400, "invalid_field", "channel"},
		{`{"fork": {"title": 5}}`, 400, "invalid_field", "fork.title"},
		{`{"budget": 1`, 400, "invalid_json", ""},
		{`[1,2]`, 400, "invalid_json", ""},
		{`{} {}`, 400, "invalid_json", ""},
	}
	for _, tc := range cases {
		res := c.do("POST", "/v1/workspaces/default/render", tc.body)
		p := res.problem(t)
		if res.Status != tc.status || p.Code != tc.code || p.Field != tc.field {
			t.Errorf("%s: got %d %s field %q (%s), want %d %s field %q", tc.body, res.Status, p.Code, p.Field, p.Detail, tc.status, tc.code, tc.field)
		}
		if res.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: content type %q", tc.body, res.Header.Get("Content-Type"))
		}
	}
	// A form post (what a browser can send cross-origin without asking) is refused.
	res := c.do("POST", "/v1/workspaces/default/render", `{}`, "Content-Type", "application/x-www-form-urlencoded")
	if res.Status != http.StatusUnsupportedMediaType {
		t.Fatalf("form body: %d", res.Status)
	}
}

func TestWatchedEditChangesRender(t *testing.T) {
	dir := writeWorkspace(t, t.TempDir())
	_, c := newServer(t, server.Options{Dir: dir})
	first := c.do("POST", "/v1/workspaces/default/render", nil)
	etag := first.Header.Get("ETag")
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("# Agent\n\nMARKER-EDITED-2b9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := c.do("POST", "/v1/workspaces/default/render", nil, "If-None-Match", etag)
		if res.Status == 200 {
			var b renderBody
			res.decode(t, &b)
			if !strings.Contains(b.Prompt, "MARKER-EDITED-2b9") || res.Header.Get("ETag") == etag {
				t.Fatalf("changed render lacks the edit or kept its ETag")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edit never showed up: still %d", res.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRootWorkspaces(t *testing.T) {
	root := t.TempDir()
	writeWorkspace(t, filepath.Join(root, "alpha"))
	os.WriteFile(filepath.Join(root, "file.txt"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(root, ".hidden"), 0o755)
	outside := writeWorkspace(t, t.TempDir())
	os.Symlink(outside, filepath.Join(root, "link"))
	_, c := newServer(t, server.Options{Root: root})
	if r := c.do("POST", "/v1/workspaces/alpha/render", nil); r.Status != 200 {
		t.Fatalf("alpha: %d %s", r.Status, r.Body)
	}
	for _, name := range []string{"default", "file.txt", ".hidden", "link", "..", "%2e%2e", "missing", "alpha%2fskills", "%00"} {
		r := c.do("POST", "/v1/workspaces/"+name+"/render", nil)
		if r.Status != http.StatusNotFound {
			t.Errorf("%q: %d, want 404", name, r.Status)
		}
	}
}

func TestAuth(t *testing.T) {
	var logs bytes.Buffer
	_, c := newServer(t, server.Options{Tokens: []string{"tok-one", "tok-two"}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if r := c.do("GET", "/healthz", nil); r.Status != 200 {
		t.Fatalf("healthz without token: %d", r.Status)
	}
	for _, tok := range []string{"", "tok-on", "tok-one-", "TOK-ONE"} {
		c.token = tok
		r := c.do("POST", "/v1/tokens", map[string]string{"text": "hi"})
		if r.Status != 401 || r.problem(t).Code != "unauthorized" || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("token %q: %d", tok, r.Status)
		}
	}
	for _, path := range []string{"/readyz", "/metrics", "/v1/openapi.json"} {
		c.token = ""
		if r := c.do("GET", path, nil); r.Status != 401 {
			t.Errorf("%s without token: %d", path, r.Status)
		}
	}
	for _, tok := range []string{"tok-one", "tok-two"} {
		c.token = tok
		if r := c.do("POST", "/v1/tokens", map[string]string{"text": "hi"}); r.Status != 200 {
			t.Fatalf("token %q: %d", tok, r.Status)
		}
	}
	if strings.Contains(logs.String(), "tok-") {
		t.Fatalf("a token reached the log:\n%s", logs.String())
	}
}

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		tokens bool
		ok     bool
	}{
		{"127.0.0.1:7411", false, true}, {"[::1]:0", false, true}, {"localhost:80", false, true},
		{"0.0.0.0:7411", false, false}, {":7411", false, false}, {"10.1.2.3:1", false, false},
		{"0.0.0.0:7411", true, true}, {"nonsense", false, false},
	} {
		err := server.CheckAddr(tc.addr, tc.tokens)
		if (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, %v) = %v", tc.addr, tc.tokens, err)
		}
	}
}

func TestBodyCap(t *testing.T) {
	_, c := newServer(t, server.Options{MaxBodyBytes: 1024})
	big := fmt.Sprintf(`{"text": %q}`, strings.Repeat("a", 4096))
	r := c.do("POST", "/v1/tokens", big)
	if r.Status != http.StatusRequestEntityTooLarge || r.problem(t).Code != "body_too_large" {
		t.Fatalf("big body: %d %s", r.Status, r.Body)
	}
}

func TestTokens(t *testing.T) {
	_, c := newServer(t, server.Options{})
	r := c.do("POST", "/v1/tokens", map[string]string{"text": "hello world"})
	var got server.TokensResponse
	r.decode(t, &got)
	if got.Tokens != 2 || got.Encoding != "o200k_base" || got.Bytes != 11 {
		t.Fatalf("got %+v", got)
	}
	r = c.do("POST", "/v1/tokens", map[string]string{"text": "hello world", "model": "gpt-4"})
	r.decode(t, &got)
	if got.Encoding != "cl100k_base" || got.Model != "gpt-4" {
		t.Fatalf("gpt-4: %+v", got)
	}
	r = c.do("POST", "/v1/tokens", map[string]string{"text": "x", "encoding": "klingon"})
	if p := r.problem(t); r.Status != 400 || p.Field != "encoding" {
		t.Fatalf("bad encoding: %d %+v", r.Status, p)
	}
	if r := c.do("GET", "/v1/tokens", nil); r.Status != 405 || r.Header.Get("Allow") != "POST" {
		t.Fatalf("GET /v1/tokens: %d allow %q", r.Status, r.Header.Get("Allow"))
	}
	if r := c.do("GET", "/v2/nothing", nil); r.Status != 404 || r.problem(t).Code != "not_found" {
		t.Fatalf("unknown route: %d", r.Status)
	}
}

func TestSkills(t *testing.T) {
	_, c := newServer(t, server.Options{})
	var list struct {
		Skills []struct{ Name, Status string } `json:"skills"`
	}
	c.do("GET", "/v1/workspaces/default/skills", nil).decode(t, &list)
	status := map[string]string{}
	for _, s := range list.Skills {
		status[s.Name] = s.Status
	}
	if status["greet"] != "ok" || status["broken"] != "broken" {
		t.Fatalf("skills: %+v", list.Skills)
	}
	var one struct{ Name, Body string }
	c.do("GET", "/v1/workspaces/default/skills/greet", nil).decode(t, &one)
	if one.Name != "greet" || !strings.Contains(one.Body, "Say hello") {
		t.Fatalf("greet: %+v", one)
	}
	var exp server.ExpandResponse
	c.do("POST", "/v1/workspaces/default/skills/greet/expand", map[string]string{"text": "to Ann"}).decode(t, &exp)
	if !strings.HasPrefix(exp.Text, `<skill_content name="greet"`) || !strings.HasSuffix(exp.Text, "/greet to Ann") || len(exp.Uses) != 1 {
		t.Fatalf("expand: %+v", exp)
	}
	if r := c.do("GET", "/v1/workspaces/default/skills/nope", nil); r.Status != 404 || r.problem(t).Code != "skill_not_found" {
		t.Fatalf("unknown skill: %d", r.Status)
	}
	if r := c.do("POST", "/v1/workspaces/default/skills/broken/expand", nil); r.Status != 422 {
		t.Fatalf("broken skill expand: %d", r.Status)
	}
}

func TestMemories(t *testing.T) {
	_, c := newServer(t, server.Options{})
	base := "/v1/workspaces/default/memories"
	r := c.do("POST", base, map[string]string{"category": "personal_fact", "content": "likes  green tea", "user": "ann"})
	if r.Status != 201 {
		t.Fatalf("add: %d %s", r.Status, r.Body)
	}
	var added server.MemoryList
	r.decode(t, &added)
	id := added.Memories[0].ID
	if added.Memories[0].Content != "likes green tea" { // white space collapsed, nothing added (#31)
		t.Fatalf("content not cleaned: %q", added.Memories[0].Content)
	}
	r = c.do("POST", base, map[string]string{"category": "personal_fact", "content": "likes black tea", "user": "ann", "supersedes": id})
	var second server.MemoryList
	r.decode(t, &second)
	var list server.MemoryList
	c.do("GET", base+"?user=ann", nil).decode(t, &list)
	if len(list.Memories) != 1 || list.Memories[0].ID != second.Memories[0].ID {
		t.Fatalf("list after supersede: %+v", list)
	}
	c.do("GET", base+"?user=bob", nil).decode(t, &list)
	if len(list.Memories) != 0 {
		t.Fatalf("bob sees ann's memories: %+v", list)
	}
	for _, tc := range []struct {
		body  map[string]string
		field string
	}{
		{map[string]string{"category": "nonsense", "content": "x"}, "category"},
		{map[string]string{"category": "personal_fact", "content": "   "}, "content"},
		{map[string]string{"category": "personal_fact", "content": "x", "supersedes": "m_missing"}, "supersedes"},
		{map[string]string{"content": "x"}, "category"},
	} {
		r := c.do("POST", base, tc.body)
		if p := r.problem(t); r.Status != 400 || p.Field != tc.field {
			t.Errorf("%v: %d field %q", tc.body, r.Status, p.Field)
		}
	}
	if r := c.do("DELETE", base+"/"+second.Memories[0].ID, nil); r.Status != 204 {
		t.Fatalf("forget: %d", r.Status)
	}
	if r := c.do("DELETE", base+"/m_nope", nil); r.Status != 404 {
		t.Fatalf("forget unknown: %d", r.Status)
	}
	var exported server.MemoryList
	c.do("GET", base+"/export", nil).decode(t, &exported)
	if len(exported.Memories) != 2 {
		t.Fatalf("export: %+v", exported)
	}
	// Import into a second workspace, then export again: the same memories.
	_, c2 := newServer(t, server.Options{})
	r = c2.do("POST", base+"/import", exported)
	if r.Status != 200 {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	var again server.MemoryList
	c2.do("GET", base+"/export", nil).decode(t, &again)
	a, _ := json.Marshal(exported)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) {
		t.Fatalf("import/export round trip differs:\n%s\n%s", a, b)
	}
	if r := c2.do("POST", base+"/import", exported); r.Status != 400 || r.problem(t).Field != "memories[0]" {
		t.Fatalf("re-import: %d %s", r.Status, r.Body)
	}
}

func TestMountAPI(t *testing.T) {
	s, c := newServer(t, server.Options{})
	s.Handle("GET /inspect/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "inspector")
	}))
	s.HandleWorkspace("GET /v1/workspaces/{ws}/echo", func(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
		server.WriteJSON(w, 200, map[string]string{"name": ws.Name, "request_id": server.RequestID(r)})
	})
	s.HandleFunc("GET /boom", func(w http.ResponseWriter, r *http.Request) { panic("kaboom") })
	req, _ := http.NewRequest("GET", c.base+"/v1/workspaces/default/echo", nil)
	req.Header.Set("X-Request-Id", "abc-123")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	json.NewDecoder(res.Body).Decode(&got)
	res.Body.Close()
	if got["name"] != "default" || got["request_id"] != "abc-123" || res.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("workspace mount: %v", got)
	}
	res, _ = http.Get(c.base + "/v1/workspaces/other/echo")
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Fatalf("unknown workspace on a mount: %d", res.StatusCode)
	}
	res, _ = http.Get(c.base + "/boom")
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 500 || !strings.Contains(string(body), `"code":"internal"`) || strings.Contains(string(body), "kaboom") {
		t.Fatalf("panic: %d %s", res.StatusCode, body)
	}
	res, _ = http.Get(c.base + "/metrics")
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), `loom_http_requests_total{code="200",method="GET",route="GET /v1/workspaces/{ws}/echo"} 1`) {
		t.Fatalf("metrics lack the mounted route:\n%s", body)
	}
}

func TestGracefulDrain(t *testing.T) {
	s, err := server.New(server.Options{Dir: writeWorkspace(t, t.TempDir()), DrainTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	entered := make(chan struct{})
	s.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "done")
	})
	var drained atomic.Bool
	s.AddDrainer(func(ctx context.Context) error { drained.Store(true); return nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	got := make(chan string, 1)
	go func() {
		res, err := http.Get(base + "/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got <- string(b)
	}()
	<-entered
	cancel() // as SIGTERM does
	time.Sleep(50 * time.Millisecond)
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Errorf("a new request was taken while draining")
	}
	if drained.Load() {
		t.Fatalf("drainer ran before the in-flight request finished")
	}
	close(release)
	if b := <-got; b != "done" {
		t.Fatalf("in-flight request: %q", b)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !drained.Load() {
		t.Fatalf("drainer did not run")
	}
}

func TestOpenAPIServed(t *testing.T) {
	_, c := newServer(t, server.Options{})
	r := c.do("GET", "/v1/openapi.json", nil)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	r.decode(t, &doc)
	if doc.OpenAPI != "3.1.0" || len(doc.Paths) < 10 {
		t.Fatalf("openapi: %s, %d paths", doc.OpenAPI, len(doc.Paths))
	}
	if r := c.do("GET", "/readyz", nil); r.Status != 200 {
		t.Fatalf("readyz: %d", r.Status)
	}
}
