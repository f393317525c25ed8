package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
)

// loomBinary builds cmd/loom once per test run.
func loomBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the loom binary")
	}
	return testenv.LoomBinary(t)
}

// proc is a running `loom serve`.
type proc struct {
	cmd  *exec.Cmd
	base string
	logs *strings.Builder
	mu   *sync.Mutex
	done chan error
}

// startServe starts the binary on a free port and waits for its address.
func startServe(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	bin := loomBinary(t)
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &strings.Builder{}, mu: &sync.Mutex{}, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			if a, ok := strings.CutPrefix(line, "loom: serving on "); ok {
				addr <- a
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.base = <-addr:
	case err := <-p.done:
		t.Fatalf("loom serve exited: %v\n%s", err, p.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("loom serve never said where it listens\n%s", p.log())
	}
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("loom serve after SIGTERM: %v\n%s", err, p.log())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("loom serve did not stop on SIGTERM\n%s", p.log())
	}
}

func TestE2EServeBinary(t *testing.T) {
	dir := writeWorkspace(t, t.TempDir())
	p := startServe(t, []string{"LOOM_TOKENS=e2e-secret-token"}, "-w", dir, "--token-env", "LOOM_TOKENS", "--log-format", "json")
	c := &client{t: t, base: p.base, token: "e2e-secret-token"}
	first := c.do("POST", "/v1/workspaces/default/render", map[string]any{"channel": "slack"})
	if first.Status != 200 || !strings.Contains(string(first.Body), "MARKER-AGENTS-7f3") {
		t.Fatalf("render: %d %.300s", first.Status, first.Body)
	}
	etag := first.Header.Get("ETag")
	if r := c.do("POST", "/v1/workspaces/default/render", map[string]any{"channel": "slack"}, "If-None-Match", etag); r.Status != 304 {
		t.Fatalf("If-None-Match: %d", r.Status)
	}
	// An edit while the server runs shows up in the next render, with a new ETag.
	os.WriteFile(filepath.Join(dir, "SOUL.md"), []byte("# Soul\n\nMARKER-SOUL-EDIT-51c\n"), 0o644)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.do("POST", "/v1/workspaces/default/render", map[string]any{"channel": "slack"}, "If-None-Match", etag)
		if r.Status == 200 {
			if !strings.Contains(string(r.Body), "MARKER-SOUL-EDIT-51c") || r.Header.Get("ETag") == etag {
				t.Fatalf("edited render: new etag %v", r.Header.Get("ETag") != etag)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the edit never showed up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.token = ""
	if r := c.do("POST", "/v1/tokens", map[string]string{"text": "x"}); r.Status != 401 {
		t.Fatalf("no token: %d", r.Status)
	}
	p.stop(t)
	logs := p.log()
	if strings.Contains(logs, "e2e-secret-token") {
		t.Fatal("the token reached the log")
	}
	var n int
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] != "" {
			n++
		}
	}
	if n < 4 {
		t.Fatalf("want one JSON log line per request, got %d:\n%s", n, logs)
	}
}

// fakeOpenAI is an OpenAI-compatible upstream that records each request.
func fakeOpenAI(t *testing.T, reply string) (*httptest.Server, func() []map[string]any) {
	var mu sync.Mutex
	var got []map[string]any
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		json.Unmarshal(data, &body)
		body["_path"] = r.URL.Path
		body["_auth"] = r.Header.Get("Authorization")
		mu.Lock()
		got = append(got, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`, reply)
	}))
	t.Cleanup(ts.Close)
	return ts, func() []map[string]any { mu.Lock(); defer mu.Unlock(); return append([]map[string]any(nil), got...) }
}

func runNode(t *testing.T, script string, env ...string) string {
	t.Helper()
	nm := testenv.NodeModules(t, "openai")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// ESM imports ignore NODE_PATH: run a copy of the script from a folder
	// whose node_modules is nm.
	tmp := t.TempDir()
	if err := os.Symlink(nm, filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, script), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", filepath.Join(tmp, script))
	cmd.Env = append(os.Environ(), append(env, "NODE_PATH="+nm)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	return string(out)
}

func TestE2ENodeOpenAIClient(t *testing.T) {
	testenv.NodeModules(t, "openai")
	dir := writeWorkspace(t, t.TempDir())
	p := startServe(t, nil, "-w", dir)
	up, requests := fakeOpenAI(t, "Miso.")
	out := runNode(t, "messages_client.mjs", "LOOM_URL="+p.base, "UPSTREAM_URL="+up.URL+"/v1")
	var res struct {
		Prefix string `json:"prefix_sha256"`
		Sent   int    `json:"sent"`
		Reply  string `json:"reply"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	if res.Reply != "Miso." || res.Sent != 2 || len(res.Prefix) != 64 {
		t.Fatalf("node: %+v", res)
	}
	reqs := requests()
	if len(reqs) != 1 || reqs[0]["_path"] != "/v1/chat/completions" {
		t.Fatalf("upstream saw %v", reqs)
	}
	msgs := reqs[0]["messages"].([]any)
	sys := msgs[0].(map[string]any)
	user := msgs[1].(map[string]any)
	if sys["role"] != "system" || !strings.Contains(fmt.Sprint(sys["content"]), "MARKER-AGENTS-7f3") || !strings.Contains(fmt.Sprint(sys["content"]), "Miso") {
		t.Fatalf("system message the model got: %.300v", sys)
	}
	if !strings.Contains(fmt.Sprint(user["content"]), "What is my cat called?") || !strings.Contains(fmt.Sprint(user["content"]), "node-1") {
		t.Fatalf("user message the model got: %v", user)
	}
	p.stop(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveLoomBinary()
	os.Exit(code)
}
