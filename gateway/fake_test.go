package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstream is a fake OpenAI-compatible endpoint. It records every request
// and answers chat requests as its fields say; extraction requests (the
// memory worker's) get the fact set in extractFact.
type upstream struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
	// reply answers a chat request; nil answers "ok".
	reply       func(w http.ResponseWriter, body map[string]any)
	extractFact string
	cancelled   chan struct{}
	// consolidateArgs is the JSON text of the save_memory arguments a
	// consolidation call gets; consolidations counts those calls.
	consolidateArgs string
	consolidations  int
	// modelList answers GET /v1/models (404 when ""); modelAsks are the
	// requests it got.
	modelList string
	modelAsks []*http.Request
}

// models answers GET /v1/models from list, recording the request; false
// for any other request.
func answerModels(w http.ResponseWriter, r *http.Request, mu *sync.Mutex, list *string, asks *[]*http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
		return false
	}
	mu.Lock()
	*asks = append(*asks, r.Clone(context.Background()))
	body := *list
	mu.Unlock()
	if body == "" {
		http.NotFound(w, r)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
	return true
}

type recorded struct {
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{cancelled: make(chan struct{}, 8)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answerModels(w, r, &u.mu, &u.modelList, &u.modelAsks) {
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		if strings.Contains(string(raw), `"name":"save_memory"`) { // a consolidation call
			u.mu.Lock()
			u.consolidations++
			args := u.consolidateArgs
			u.mu.Unlock()
			a, _ := json.Marshal(args)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_c","type":"function","function":{"name":"save_memory","arguments":%s}}]},"finish_reason":"tool_calls"}]}`, a)
			return
		}
		if strings.Contains(string(raw), "user_instructions") { // the extraction call
			content := fmt.Sprintf(`{"user_instructions": [], "user_profile": [%s]}`, u.fact())
			if body["stream"] == true {
				w.Header().Set("Content-Type", "text/event-stream")
				c, _ := json.Marshal(content)
				fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\ndata: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", c)
				return
			}
			writeCompletion(w, content)
			return
		}
		u.mu.Lock()
		u.requests = append(u.requests, recorded{Header: r.Header.Clone(), Body: body, Raw: raw})
		reply := u.reply
		u.mu.Unlock()
		if reply == nil {
			writeCompletion(w, "ok")
			return
		}
		reply(w, body)
		if r.Context().Err() != nil {
			u.cancelled <- struct{}{}
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) fact() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.extractFact == "" {
		return ""
	}
	b, _ := json.Marshal(map[string]string{"content": u.extractFact, "supersedes_id": ""})
	return string(b)
}

func (u *upstream) last(t *testing.T) recorded {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.requests) == 0 {
		t.Fatal("the upstream got no chat request")
	}
	return u.requests[len(u.requests)-1]
}

func (u *upstream) setReply(f func(w http.ResponseWriter, body map[string]any)) {
	u.mu.Lock()
	u.reply = f
	u.mu.Unlock()
}

// completionBody is a whole chat completion, byte for byte as sent.
func completionBody(content string) string {
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`{"id":"chatcmpl-fake","object":"chat.completion","created":1700000000,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14},"system_fingerprint":"fp_fake"}`, c)
}

func writeCompletion(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, completionBody(content))
}

// streamBody is a streamed reply of the given pieces, byte for byte.
func streamChunks(pieces ...string) []string {
	var out []string
	out = append(out, `data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n")
	for _, p := range pieces {
		c, _ := json.Marshal(p)
		out = append(out, fmt.Sprintf(`data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`+"\n\n", c))
	}
	out = append(out, `data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`+"\n\n", "data: [DONE]\n\n")
	return out
}

func writeStream(w http.ResponseWriter, chunks []string, pause time.Duration) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, c := range chunks {
		if _, err := io.WriteString(w, c); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		time.Sleep(pause)
	}
}

// writeWorkspace makes a workspace whose loom.yaml sends the model to up,
// with the key in LOOM_TEST_UPSTREAM_KEY.
func writeWorkspace(t testing.TB, up string, extra string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"AGENTS.md":             "# Agent\n\nMARKER-AGENTS-7f3: answer briefly.\n",
		"SOUL.md":               "# Soul\n\nCurious and kind.\n",
		"skills/greet/SKILL.md": "---\nname: greet\ndescription: Greet the user by name.\n---\n\nSKILL-BODY-GREET: say hello by name.\n",
		"loom.yaml":             fmt.Sprintf("llm:\n  provider: openai\n  base_url: %s/v1\n  model: fake-model\n  api_key_env: LOOM_TEST_UPSTREAM_KEY\n  consolidation:\n    enabled: false\n%s", up, extra),
	}
	for rel, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
