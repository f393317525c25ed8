package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
)

// TestNodeOpenAIClient drives the gateway with the official openai npm
// package (LOOM_TEST_NODE_MODULES): plain, streamed and tool-call requests.
func TestNodeOpenAIClient(t *testing.T) {
	nm := testenv.NodeModules(t, "openai")
	e := setup(t, "")
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) {
		msgs := body["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		switch {
		case body["stream"] == true:
			writeStream(w, streamChunks("al", "pha ", "beta"), 5*time.Millisecond)
		case last["role"] == "tool":
			writeCompletion(w, "21 degrees in Oslo.")
		case len(body["tools"].([]any)) > 0:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},"finish_reason":"tool_calls"}]}`)
		default:
			writeCompletion(w, "plain answer")
		}
	})
	e.up.reply = wrapNoTools(e.up.reply)
	checkNodeClient(t, runNodeClient(t, nm, e.base))
	// What the upstream got: loom's prompt, the runtime block on the user's
	// message, the client's key nowhere.
	e.up.mu.Lock()
	reqs := append([]recorded(nil), e.up.requests...)
	e.up.mu.Unlock()
	if len(reqs) != 4 {
		t.Fatalf("upstream got %d chat requests", len(reqs))
	}
	for _, r := range reqs {
		msgs := r.Body["messages"].([]any)
		if !strings.Contains(msgText(msgs[0]), "MARKER-AGENTS-7f3") || strings.Contains(string(r.Raw), "client-side-key") || strings.Contains(r.Header.Get("Authorization"), "client-side-key") {
			t.Fatalf("upstream request: %.300s", r.Raw)
		}
	}
	if first := reqs[0]; first.Body["temperature"] != 0.5 || !strings.Contains(msgText(first.Body["messages"].([]any)[1]), "slack") {
		t.Errorf("first request: %s", first.Raw)
	}
	if hist := sessionMessagesN(t, e, "node-tools", 4); len(hist.Messages) != 4 {
		t.Errorf("tool session saved %d messages", len(hist.Messages))
	}
}

// nodeOutput is what chat_client.mjs saw.
type nodeOutput struct {
	Plain        string         `json:"plain"`
	Prefix       string         `json:"prefix"`
	PromptTokens string         `json:"prompt_tokens"`
	Deltas       []string       `json:"deltas"`
	ToolCall     map[string]any `json:"tool_call"`
	ToolAnswer   string         `json:"tool_answer"`
	Bad          map[string]any `json:"bad"`
}

// runNodeClient runs chat_client.mjs against the gateway at base.
func runNodeClient(t *testing.T, nm, base string) nodeOutput {
	t.Helper()
	tmp := t.TempDir()
	if err := os.Symlink(nm, filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "chat_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tmp, "chat_client.mjs"), src, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(tmp, "chat_client.mjs"))
	cmd.Env = append(os.Environ(), "LOOM_BASE_URL="+base+"/v1", "NODE_PATH="+nm)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var got nodeOutput
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}
	return got
}

// checkNodeClient checks what the client saw, the same whatever the
// upstream speaks.
func checkNodeClient(t *testing.T, got nodeOutput) {
	t.Helper()
	if got.Plain != "plain answer" || len(got.Prefix) != 64 || got.PromptTokens == "" || got.PromptTokens == "0" {
		t.Errorf("plain: %+v", got)
	}
	if !reflect.DeepEqual(got.Deltas, []string{"al", "pha ", "beta"}) {
		t.Errorf("stream deltas %q", got.Deltas)
	}
	if !reflect.DeepEqual(got.ToolCall, map[string]any{"name": "weather", "arguments": map[string]any{"city": "Oslo"}}) || got.ToolAnswer != "21 degrees in Oslo." {
		t.Errorf("tool loop: %+v %q", got.ToolCall, got.ToolAnswer)
	}
	if got.Bad["status"] != float64(400) || got.Bad["param"] != "messages[0].role" {
		t.Errorf("malformed: %+v", got.Bad)
	}
}

// TestNodeOpenAIClientAnthropic is the same client, unchanged, through a
// gateway whose upstream is the Anthropic Messages API: plain, streamed
// and tool-call requests come back in OpenAI's shapes.
func TestNodeOpenAIClientAnthropic(t *testing.T) {
	nm := testenv.NodeModules(t, "openai")
	e, up := setupAnthropic(t, "")
	up.setReply(func(w http.ResponseWriter, body map[string]any) {
		msgs := body["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		lastBlock, _ := last["content"].([]any)[0].(map[string]any)
		switch {
		case body["stream"] == true:
			anthropicStream(w, 5*time.Millisecond, "", "al", "pha ", "beta")
		case lastBlock["type"] == "tool_result":
			anthropicMessage(w, "21 degrees in Oslo.")
		case body["tools"] != nil:
			anthropicMessage(w, "", "weather", `{"city":"Oslo"}`)
		default:
			anthropicMessage(w, "plain answer")
		}
	})
	checkNodeClient(t, runNodeClient(t, nm, e.base))
	up.mu.Lock()
	reqs := append([]recorded(nil), up.requests...)
	up.mu.Unlock()
	if len(reqs) != 4 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	for _, r := range reqs {
		if !strings.Contains(string(r.Raw), "MARKER-AGENTS-7f3") || strings.Contains(string(r.Raw), "client-side-key") || r.Header.Get("X-Api-Key") != "sk-ant-upstream-secret" {
			t.Fatalf("upstream request: %v %.300s", r.Header, r.Raw)
		}
	}
	if first := reqs[0]; first.Body["temperature"] != 0.5 || !strings.Contains(string(first.Raw), "slack") {
		t.Errorf("first request: %s", first.Raw)
	}
	if hist := sessionMessagesN(t, e, "node-tools", 4); len(hist.Messages) != 4 {
		t.Errorf("tool session saved %d messages", len(hist.Messages))
	}
}

// wrapNoTools lets the reply function index body["tools"] on requests
// without tools.
func wrapNoTools(f func(http.ResponseWriter, map[string]any)) func(http.ResponseWriter, map[string]any) {
	return func(w http.ResponseWriter, body map[string]any) {
		if _, ok := body["tools"]; !ok {
			body["tools"] = []any{}
		}
		f(w, body)
	}
}
