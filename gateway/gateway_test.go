package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/gateway"
	"github.com/loomctx/loom/server"
)

type env struct {
	up   *upstream
	base string
	dir  string
}

func setup(t *testing.T, yamlExtra string) *env {
	t.Helper()
	for _, k := range []string{"LOOM_LLM_BASE_URL", "LOOM_LLM_API_KEY", "LOOM_LLM_MODEL", "LOOM_LLM_PROVIDER", "LOOM_MEMORY_DB"} {
		t.Setenv(k, "")
	}
	t.Setenv("LOOM_TEST_UPSTREAM_KEY", "sk-upstream-secret")
	t.Setenv("LOOM_ALLOWED_ENDPOINTS", "127.0.0.1")
	up := newUpstream(t)
	dir := writeWorkspace(t, up.URL, yamlExtra)
	s, err := server.New(server.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	gateway.Mount(s, gateway.Options{Now: func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return &env{up: up, base: ts.URL, dir: dir}
}

func (e *env) post(t *testing.T, path string, body any, headers ...string) *http.Response {
	t.Helper()
	data, ok := body.([]byte)
	if !ok {
		data, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest("POST", e.base+path, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func msgText(m any) string {
	c := m.(map[string]any)["content"]
	if s, ok := c.(string); ok {
		return s
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func TestNonStreaming(t *testing.T) {
	e := setup(t, "")
	res := e.post(t, "/v1/chat/completions", map[string]any{
		"model": "fake-model",
		"messages": []any{
			map[string]any{"role": "system", "content": "CLIENT-SYSTEM-91x"},
			map[string]any{"role": "user", "content": "hello"},
			map[string]any{"role": "assistant", "content": "hi there"},
			map[string]any{"role": "user", "content": "please /greet me"},
		},
		"temperature":     0.25,
		"tools":           []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "parameters": map[string]any{"type": "object"}}}},
		"response_format": map[string]any{"type": "text"},
		"x_vendor_field":  map[string]any{"keep": []any{1, "two"}},
		"user":            "ann",
	}, "Authorization", "Bearer client-own-secret", "X-Loom-Channel", "slack")
	body := readAll(t, res)
	if res.StatusCode != 200 || body != completionBody("ok") {
		t.Fatalf("reply not relayed byte for byte: %d %s", res.StatusCode, body)
	}
	for _, h := range []string{"X-Loom-Prompt-Tokens", "X-Loom-Prefix-Sha256", "X-Loom-Dropped"} {
		if res.Header.Get(h) == "" {
			t.Errorf("missing %s", h)
		}
	}
	if len(res.Header.Get("X-Loom-Prefix-Sha256")) != 64 || res.Header.Get("X-Loom-Session") != "ann" {
		t.Errorf("headers: %v", res.Header)
	}
	got := e.up.last(t)
	if got.Header.Get("Authorization") != "Bearer sk-upstream-secret" {
		t.Fatalf("upstream Authorization %q: want loom's key, never the client's", got.Header.Get("Authorization"))
	}
	msgs := got.Body["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("upstream got %d messages: %s", len(msgs), got.Raw)
	}
	sys := msgText(msgs[0])
	if msgs[0].(map[string]any)["role"] != "system" || !strings.Contains(sys, "MARKER-AGENTS-7f3") ||
		!strings.Contains(sys, "CLIENT-SYSTEM-91x") || strings.Index(sys, "MARKER-AGENTS-7f3") > strings.Index(sys, "CLIENT-SYSTEM-91x") {
		t.Fatalf("system message: %.400q", sys)
	}
	if strings.Contains(sys, "2026-03-04") {
		t.Fatalf("the runtime block is in the system prompt")
	}
	lastUser := msgText(msgs[3])
	if !strings.Contains(lastUser, "please /greet me") || !strings.Contains(lastUser, "SKILL-BODY-GREET") || !strings.Contains(lastUser, "2026-03-04") || !strings.Contains(lastUser, "slack") {
		t.Fatalf("last user message: %q", lastUser)
	}
	if msgText(msgs[1]) != "hello" || msgText(msgs[2]) != "hi there" {
		t.Fatalf("history changed: %s", got.Raw)
	}
	for _, k := range []string{"temperature", "tools", "response_format", "x_vendor_field", "user", "model"} {
		want, _ := json.Marshal(map[string]any{
			"temperature": 0.25, "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "parameters": map[string]any{"type": "object"}}}},
			"response_format": map[string]any{"type": "text"}, "x_vendor_field": map[string]any{"keep": []any{1, "two"}}, "user": "ann", "model": "fake-model"}[k])
		have, _ := json.Marshal(got.Body[k])
		if string(have) != string(want) {
			t.Errorf("%s: upstream got %s, want %s", k, have, want)
		}
	}
	// The turn is saved as typed: no runtime block, the whole reply.
	var hist server.SessionMessages
	r2, _ := http.Get(e.base + "/v1/workspaces/default/sessions/ann/messages")
	json.NewDecoder(r2.Body).Decode(&hist)
	r2.Body.Close()
	hist = sessionMessages(t, e, "ann")
	if len(hist.Messages) != 2 || hist.Messages[0].Content.Text != "please /greet me" || hist.Messages[1].Content.Text != "ok" {
		t.Fatalf("saved: %+v", hist.Messages)
	}
	r3, _ := http.Get(e.base + "/v1/workspaces/default/sessions/ann/last-report")
	rep := readAll(t, r3)
	if r3.StatusCode != 200 || !strings.Contains(rep, `"client_system"`) {
		t.Fatalf("last report: %d %.300s", r3.StatusCode, rep)
	}
}

func TestStreamingRelayedChunkByChunk(t *testing.T) {
	e := setup(t, "")
	chunks := streamChunks("Hel", "lo ", "Ann")
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) { writeStream(w, chunks, 30*time.Millisecond) })
	res := e.post(t, "/v1/workspaces/default/chat/completions", map[string]any{
		"model": "fake-model", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}},
	}, "X-Loom-Session", "stream-1")
	if res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", res.Header.Get("Content-Type"))
	}
	// The first chunk arrives before the upstream has sent the rest.
	br := bufio.NewReader(res.Body)
	start := time.Now()
	first, _ := br.ReadString('\n')
	if first != strings.SplitAfter(chunks[0], "\n")[0] || time.Since(start) > 60*time.Millisecond*time.Duration(len(chunks)) {
		t.Fatalf("first line %q after %v", first, time.Since(start))
	}
	rest, _ := io.ReadAll(br)
	res.Body.Close()
	if first+string(rest) != strings.Join(chunks, "") {
		t.Fatalf("stream not relayed byte for byte:\n%s", first+string(rest))
	}
	hist := sessionMessages(t, e, "stream-1")
	if len(hist.Messages) != 2 || hist.Messages[1].Content.Text != "Hello Ann" || hist.Messages[1].Extra() != nil {
		t.Fatalf("saved: %+v", hist.Messages)
	}
}

func sessionMessages(t *testing.T, e *env, id string) server.SessionMessages {
	t.Helper()
	return sessionMessagesN(t, e, id, 1)
}

// sessionMessagesN reads the session and checks it holds at least n
// messages: the gateway stores a turn before it answers, so there is
// nothing to wait for.
func sessionMessagesN(t *testing.T, e *env, id string, n int) server.SessionMessages {
	t.Helper()
	var hist server.SessionMessages
	r, err := http.Get(e.base + "/v1/workspaces/default/sessions/" + id + "/messages")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(r.Body).Decode(&hist)
	r.Body.Close()
	if len(hist.Messages) < n {
		t.Fatalf("session %s holds %d messages once answered, want at least %d", id, len(hist.Messages), n)
	}
	return hist
}

func TestToolCallRoundTrip(t *testing.T) {
	e := setup(t, "")
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) {
		msgs := body["messages"].([]any)
		if msgs[len(msgs)-1].(map[string]any)["role"] == "tool" {
			writeCompletion(w, "It is 21 degrees.")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},"finish_reason":"tool_calls"}]}`)
	})
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather", "parameters": map[string]any{"type": "object"}}}}
	user := map[string]any{"role": "user", "content": "weather in Oslo?"}
	res := e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "tools": tools, "messages": []any{user}}, "X-Loom-Session", "tools-1")
	var first struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	json.Unmarshal([]byte(readAll(t, res)), &first)
	call := first.Choices[0].Message
	res = e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "tools": tools, "messages": []any{
		user, call, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"temp": 21}`},
	}}, "X-Loom-Session", "tools-1")
	if body := readAll(t, res); body != completionBody("It is 21 degrees.") {
		t.Fatalf("second reply: %s", body)
	}
	got := e.up.last(t).Body["messages"].([]any)
	if len(got) != 4 {
		t.Fatalf("upstream got %d messages", len(got))
	}
	asst, tool := got[2].(map[string]any), got[3].(map[string]any)
	if tc := asst["tool_calls"].([]any)[0].(map[string]any); tc["id"] != "call_1" || tool["tool_call_id"] != "call_1" || tool["content"] != `{"temp": 21}` {
		t.Fatalf("tool loop not passed through: %v %v", asst, tool)
	}
	if !strings.Contains(msgText(got[1]), "weather in Oslo?") || !strings.Contains(msgText(got[1]), "2026-03-04") {
		t.Fatalf("the user message lost its runtime block in the loop: %v", got[1])
	}
	hist := sessionMessagesN(t, e, "tools-1", 4)
	roles := []string{}
	for _, m := range hist.Messages {
		roles = append(roles, string(m.Role))
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" || hist.Messages[1].ToolCalls[0].ID != "call_1" {
		t.Fatalf("saved roles %v", roles)
	}
}

func TestFaults(t *testing.T) {
	e := setup(t, "")
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) {
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit"}}`)
	})
	msg := map[string]any{"model": "fake-model", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	res := e.post(t, "/v1/chat/completions", msg)
	if body := readAll(t, res); res.StatusCode != 429 || res.Header.Get("Retry-After") != "7" || !strings.Contains(body, "slow down") {
		t.Fatalf("429: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	for _, tc := range []struct {
		body  string
		param string
	}{
		{`{"model": "m"}`, "messages"},
		{`{"messages": []}`, "messages"},
		{`{"messages": [{"role": "wizard", "content": "x"}]}`, "messages[0].role"},
		{`{"messages": [{"role": "user", "content": 5}]}`, "messages[0]"},
		{`{"messages": [{"role": "assistant", "content": "x"}]}`, "messages"},
		{`{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}`, "stream"},
		{`{"messages": [{"role": "tool", "content": "x"}, {"role": "user", "content": "y"}]}`, "messages[0].tool_call_id"},
		{`[1]`, ""},
	} {
		res := e.post(t, "/v1/chat/completions", []byte(tc.body))
		var out struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(readAll(t, res)), &out)
		param := ""
		if out.Error.Param != nil {
			param = *out.Error.Param
		}
		if res.StatusCode != 400 || out.Error.Type != "invalid_request_error" || param != tc.param {
			t.Errorf("%s: %d %+v", tc.body, res.StatusCode, out.Error)
		}
	}
	// The upstream goes away: 502 naming it, never the key.
	e.up.Close()
	res = e.post(t, "/v1/chat/completions", msg)
	body := readAll(t, res)
	if res.StatusCode != 502 || !strings.Contains(body, strings.TrimPrefix(e.up.URL, "http://")) || strings.Contains(body, "sk-upstream-secret") || !strings.Contains(body, `"type":"upstream_error"`) {
		t.Fatalf("upstream down: %d %s", res.StatusCode, body)
	}
}

func TestClientDisconnectSavesCut(t *testing.T) {
	e := setup(t, "")
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) {
		writeStream(w, streamChunks("one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight ", "nine ", "ten "), 100*time.Millisecond)
	})
	res := e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "count"}}}, "X-Loom-Session", "cut-1")
	br := bufio.NewReader(res.Body)
	for i := 0; i < 4; i++ { // the role chunk and the first content chunk
		br.ReadString('\n')
	}
	res.Body.Close()
	select {
	case <-e.up.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
	hist := sessionMessages(t, e, "cut-1")
	if len(hist.Messages) != 2 {
		t.Fatalf("saved %d messages", len(hist.Messages))
	}
	reply := hist.Messages[1]
	if _, cut := reply.Extra()["loom_cut"]; !cut || !strings.HasPrefix(reply.Content.Text, "one") || strings.Contains(reply.Content.Text, "ten") {
		t.Fatalf("cut reply saved as %+v", reply)
	}
}

func TestClientSystemModes(t *testing.T) {
	for _, tc := range []struct {
		mode              string
		loom, client, mem bool
	}{
		{"replace", false, true, true},
		{"ignore", true, false, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			e := setup(t, "gateway:\n  client_system: "+tc.mode+"\n")
			// A memory, so "loom adds only memory" can be checked.
			mem, _ := json.Marshal(map[string]string{"category": "personal_fact", "content": "MEMORY-FACT-77 the user owns a kayak", "user": "bo"})
			r, _ := http.Post(e.base+"/v1/workspaces/default/memories", "application/json", bytes.NewReader(mem))
			r.Body.Close()
			res := e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{
				map[string]any{"role": "developer", "content": []any{map[string]any{"type": "text", "text": "CLIENT-SYSTEM-91x"}}},
				map[string]any{"role": "user", "content": "hi"},
			}, "user": "bo"})
			readAll(t, res)
			sys := msgText(e.up.last(t).Body["messages"].([]any)[0])
			if strings.Contains(sys, "MARKER-AGENTS-7f3") != tc.loom || strings.Contains(sys, "CLIENT-SYSTEM-91x") != tc.client || strings.Contains(sys, "MEMORY-FACT-77") != tc.mem {
				t.Fatalf("system for %s: %q", tc.mode, sys)
			}
		})
	}
}

// Memory is really written and really used: what the user says in session
// A is extracted, and a new session B for the same user gets it.
func TestMemoryAcrossSessions(t *testing.T) {
	e := setup(t, "")
	e.up.extractFact = "The user prefers oat milk."
	res := e.post(t, "/v1/chat/completions", map[string]any{"user": "cy", "messages": []any{
		map[string]any{"role": "user", "content": "Remember this: I always take oat milk in my coffee, never dairy."}}}, "X-Loom-Session", "A")
	readAll(t, res)
	// The reply returns before the turn is saved and extracted: wait for
	// session A's memory, then open session B.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, _ := http.Get(e.base + "/v1/workspaces/default/memories?user=cy")
		if list := readAll(t, r); strings.Contains(list, `"chat":"A"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("session A's message was never extracted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	res = e.post(t, "/v1/chat/completions", map[string]any{"user": "cy", "messages": []any{
		map[string]any{"role": "user", "content": "What milk do I take?"}}}, "X-Loom-Session", "B")
	readAll(t, res)
	if sys := msgText(e.up.last(t).Body["messages"].([]any)[0]); !strings.Contains(sys, "The user prefers oat milk.") {
		t.Fatalf("session B's system prompt lacks the memory:\n%s", sys)
	}
}

var _ = fmt.Sprint

func TestCacheBreakHeader(t *testing.T) {
	e := setup(t, "")
	ask := func() *http.Response {
		res := e.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "X-Loom-Session", "cb")
		readAll(t, res)
		return res
	}
	ask()
	if res := ask(); res.Header.Get("X-Loom-Cache-Break") != "" {
		t.Fatalf("unchanged prefix reported as broken: %q", res.Header.Get("X-Loom-Cache-Break"))
	}
	if err := os.WriteFile(filepath.Join(e.dir, "SOUL.md"), []byte("# Soul\n\nChanged.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if brk := ask().Header.Get("X-Loom-Cache-Break"); brk != "" {
			if strings.Contains(brk, "message") {
				t.Fatalf("break named %q, want the changed section", brk)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no X-Loom-Cache-Break after the prompt changed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An upstream that redirects must not get the operator's key sent on to the
// redirect's target, even on the same host (another port is another
// service).
func TestRedirectIsNotFollowed(t *testing.T) {
	e := setup(t, "")
	var leaked = make(chan string, 1)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case leaked <- r.Header.Get("Authorization"):
		default:
		}
		w.WriteHeader(500)
	}))
	defer other.Close()
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) {
		w.Header().Set("Location", other.URL+"/v1/chat/completions")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	data, _ := json.Marshal(map[string]any{"model": "fake-model", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	req, _ := http.NewRequest("POST", e.base+"/v1/chat/completions", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	// This client does not follow redirects either, so anything reaching
	// the other server came from the gateway.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	select {
	case auth := <-leaked:
		t.Fatalf("the gateway followed the redirect (Authorization %q reached the other server)", auth)
	default:
	}
	if strings.Contains(body, "sk-upstream-secret") || res.StatusCode < 300 {
		t.Errorf("redirect answer: %d %s", res.StatusCode, body)
	}
}
