package gateway_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/llm/llmtest"
)

// The Responses and Messages front ends driven by the real npm clients,
// each through loom to a fake OpenAI-compatible upstream and to a fake
// Anthropic one. The fakes answer like a model with one tool: a question
// about the weather gets a weather call, a tool result gets an answer
// quoting it, anything else "plain answer" ("alpha beta" in three pieces
// when streamed).

const aliasYAML = "gateway:\n  models:\n    claude-sonnet-4-5: fake-model-big\n"

// lastUserText is the text of the last message of an upstream request in
// either provider's shape, and whether it is a tool result.
func lastUserText(body map[string]any) (string, bool) {
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return "", false
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] == "tool" {
		return msgText(last), true
	}
	if blocks, ok := last["content"].([]any); ok {
		var b strings.Builder
		for _, x := range blocks {
			blk, _ := x.(map[string]any)
			switch blk["type"] {
			case "tool_result":
				c, _ := json.Marshal(blk["content"])
				return string(c), true
			case "text":
				b.WriteString(blk["text"].(string))
			}
		}
		return b.String(), false
	}
	return msgText(last), false
}

func hasTools(body map[string]any) bool {
	tools, _ := body["tools"].([]any)
	return len(tools) > 0
}

// toolAnswer quotes the tool's result, so a test sees it went round.
func toolAnswer(result string) string {
	if strings.Contains(result, "21 degrees") {
		return "The weather tool says: 21 degrees"
	}
	return "The weather tool said something else: " + result
}

// openaiModel answers as a model behind a Chat Completions endpoint.
func openaiModel(w http.ResponseWriter, body map[string]any) {
	text, isResult := lastUserText(body)
	stream := body["stream"] == true
	switch {
	case isResult:
		if stream {
			writeStream(w, streamChunks(toolAnswer(text)), 0)
			return
		}
		writeCompletion(w, toolAnswer(text))
	case hasTools(body) && strings.Contains(text, "weather"):
		if stream {
			writeStream(w, []string{
				`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}]}` + "\n\n",
				`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}` + "\n\n",
				`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]},"finish_reason":null}]}` + "\n\n",
				`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":6,"total_tokens":46}}` + "\n\n",
				"data: [DONE]\n\n"}, 0)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":6,"total_tokens":46}}`)
	case stream:
		writeStream(w, streamChunks("al", "pha ", "beta"), 2*time.Millisecond)
	default:
		writeCompletion(w, "plain answer")
	}
}

// anthropicModel answers as a model behind the Messages API.
func anthropicModel(w http.ResponseWriter, body map[string]any) {
	text, isResult := lastUserText(body)
	stream := body["stream"] == true
	switch {
	case isResult:
		if stream {
			anthropicStream(w, 0, "", toolAnswer(text))
			return
		}
		anthropicMessage(w, toolAnswer(text))
	case hasTools(body) && strings.Contains(text, "weather"):
		if stream {
			anthropicStream(w, 0, "weather")
			return
		}
		anthropicMessage(w, "", "weather", `{"city":"Oslo"}`)
	case stream:
		anthropicStream(w, 2*time.Millisecond, "", "al", "pha ", "beta")
	default:
		anthropicMessage(w, "plain answer")
	}
}

// protoEnv is a gateway with a fake upstream of one provider.
type protoEnv struct {
	*env
	provider  string
	anthropic *anthropicUp // the Anthropic upstream, when provider is anthropic
	requests  func() []recorded
}

func protoSetups(t *testing.T, yamlExtra string) []protoEnv {
	t.Helper()
	e := setup(t, yamlExtra)
	e.up.setReply(openaiModel)
	ea, up := setupAnthropic(t, yamlExtra)
	up.setReply(anthropicModel)
	return []protoEnv{
		{env: e, provider: "openai", requests: func() []recorded {
			e.up.mu.Lock()
			defer e.up.mu.Unlock()
			return append([]recorded(nil), e.up.requests...)
		}},
		{env: ea, provider: "anthropic", anthropic: up, requests: func() []recorded {
			up.mu.Lock()
			defer up.mu.Unlock()
			return append([]recorded(nil), up.requests...)
		}},
	}
}

// runNode runs a script from testdata with node, its modules at nm and the
// given environment, and decodes the JSON it prints into out.
func runNode(t *testing.T, nm, script string, out any, env ...string) {
	t.Helper()
	tmp := t.TempDir()
	if err := os.Symlink(nm, filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tmp, script), src, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(tmp, script))
	cmd.Env = append(append(os.Environ(), "NODE_PATH="+nm, "OPENAI_AGENTS_DISABLE_TRACING=1"), env...)
	stdout, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, stdout, stderr)
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node %s output %s: %v", script, stdout, err)
	}
}

// upstreamSystem is the system text an upstream request carries, in
// either provider's shape.
func upstreamSystem(r recorded) string {
	if sys, ok := r.Body["system"]; ok {
		b, _ := json.Marshal(sys)
		return string(b)
	}
	msgs, _ := r.Body["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	return msgText(msgs[0])
}

// checkStoredOnce waits for a session to hold want messages, then checks
// it holds no more: each turn stored once.
func checkStoredOnce(t *testing.T, e *env, session string, want int) []map[string]any {
	t.Helper()
	hist := sessionMessagesN(t, e, session, want)
	time.Sleep(50 * time.Millisecond)
	hist = sessionMessagesN(t, e, session, want)
	if len(hist.Messages) != want {
		b, _ := json.Marshal(hist.Messages)
		t.Errorf("session %s holds %d messages, want %d: %s", session, len(hist.Messages), want, b)
	}
	var out []map[string]any
	b, _ := json.Marshal(hist.Messages)
	json.Unmarshal(b, &out)
	return out
}

func TestNodeResponsesAPI(t *testing.T) {
	nm := testenv.NodeModules(t, "openai")
	for _, pe := range protoSetups(t, aliasYAML) {
		t.Run(pe.provider, func(t *testing.T) {
			var got struct {
				Plain       string          `json:"plain"`
				PlainStatus string          `json:"plain_status"`
				PlainUsage  map[string]any  `json:"plain_usage"`
				Prefix      string          `json:"prefix"`
				Events      []string        `json:"events"`
				Deltas      []string        `json:"deltas"`
				StreamText  string          `json:"stream_text"`
				ToolCall    map[string]any  `json:"tool_call"`
				ToolAnswer  string          `json:"tool_answer"`
				ChainIDs    []string        `json:"chain_ids"`
				ToolEvents  []string        `json:"tool_events"`
				StreamArgs  string          `json:"streamed_args"`
				Models      []string        `json:"models"`
				Bad         map[string]any  `json:"bad"`
				Extra       json.RawMessage `json:"-"`
			}
			runNode(t, nm, "responses_client.mjs", &got, "LOOM_BASE_URL="+pe.base+"/v1")
			if got.Plain != "plain answer" || got.PlainStatus != "completed" || got.PlainUsage["input_tokens"] == nil || len(got.Prefix) != 64 {
				t.Errorf("plain: %+v", got)
			}
			// The text deltas (one event each, as many as the deltas) shown
			// as one.
			wantEvents := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta",
				"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
			var events []string
			deltaEvents := 0
			for _, e := range got.Events {
				if e == "response.output_text.delta" {
					if deltaEvents++; deltaEvents > 1 && events[len(events)-1] == e {
						continue
					}
				}
				events = append(events, e)
			}
			if !reflect.DeepEqual(events, wantEvents) || deltaEvents != len(got.Deltas) || !llmtest.DeltasOnEvents(got.Deltas, "al", "pha ", "beta") || got.StreamText != "alpha beta" {
				t.Errorf("stream: events %q deltas %q text %q", got.Events, got.Deltas, got.StreamText)
			}
			if !reflect.DeepEqual(got.ToolCall, map[string]any{"name": "weather", "arguments": map[string]any{"city": "Oslo"}}) ||
				got.ToolAnswer != "The weather tool says: 21 degrees" {
				t.Errorf("tool loop: %+v %q", got.ToolCall, got.ToolAnswer)
			}
			if !reflect.DeepEqual(got.ToolEvents, []string{"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done"}) ||
				got.StreamArgs != `{"city":"Oslo"}` {
				t.Errorf("streamed tool call: %q %q", got.ToolEvents, got.StreamArgs)
			}
			if !reflect.DeepEqual(got.Models, []string{"fake-model", "claude-sonnet-4-5"}) && !reflect.DeepEqual(got.Models, []string{"claude-fake", "claude-sonnet-4-5"}) {
				t.Errorf("models %q", got.Models)
			}
			if got.Bad["status"] != float64(404) || got.Bad["message"] != `no workspace named "nope"; served: default` {
				t.Errorf("unknown workspace: %+v", got.Bad)
			}

			reqs := pe.requests()
			if len(reqs) != 5 {
				t.Fatalf("upstream got %d requests, want 5", len(reqs))
			}
			for i, r := range reqs {
				sys := upstreamSystem(r)
				if !strings.Contains(sys, "MARKER-AGENTS-7f3") || strings.Contains(string(r.Raw), "client-side-key") {
					t.Errorf("request %d lacks loom's prompt or leaks the client key: %.300s", i, r.Raw)
				}
				if want := map[string]string{"openai": "fake-model", "anthropic": "claude-fake"}[pe.provider]; r.Body["model"] != want {
					t.Errorf("request %d went to model %v, want llm.model %s", i, r.Body["model"], want)
				}
			}
			if sys := upstreamSystem(reqs[0]); !strings.Contains(sys, "CLIENT-INSTRUCTIONS-5c1") || strings.Index(sys, "MARKER-AGENTS-7f3") > strings.Index(sys, "CLIENT-INSTRUCTIONS-5c1") {
				t.Errorf("the client's instructions are not after loom's prompt: %.2000s", sys)
			}
			// The tool answer's request: the whole conversation, rebuilt from
			// the session for previous_response_id.
			raw := string(reqs[3].Raw)
			if !strings.Contains(raw, "weather in Oslo?") || !strings.Contains(raw, "21 degrees") || !strings.Contains(raw, `Oslo`) {
				t.Errorf("previous_response_id did not bring back the conversation: %.3000s", raw)
			}

			checkStoredOnce(t, pe.env, "resp-plain", 2)
			checkStoredOnce(t, pe.env, "resp-stream", 2)
			key, _, _ := strings.Cut(strings.TrimPrefix(got.ChainIDs[0], "resp_"), "_")
			session, _ := hex.DecodeString(key)
			msgs := checkStoredOnce(t, pe.env, string(session), 4)
			if len(msgs) == 4 && (msgs[0]["role"] != "user" || msgs[1]["tool_calls"] == nil || msgs[2]["role"] != "tool" || msgs[3]["content"] != "The weather tool says: 21 degrees") {
				t.Errorf("tool session: %v", msgs)
			}
		})
	}
}

func TestNodeAnthropicSDK(t *testing.T) {
	nm := testenv.NodeModules(t, "@anthropic-ai/sdk")
	for _, pe := range protoSetups(t, aliasYAML) {
		t.Run(pe.provider, func(t *testing.T) {
			var got struct {
				Plain        string         `json:"plain"`
				PlainStop    string         `json:"plain_stop"`
				PlainUsage   map[string]any `json:"plain_usage"`
				Deltas       []string       `json:"deltas"`
				StreamText   string         `json:"stream_text"`
				StreamStop   string         `json:"stream_stop"`
				ToolCall     map[string]any `json:"tool_call"`
				ToolAnswer   string         `json:"tool_answer"`
				StreamedTool map[string]any `json:"streamed_tool"`
				Count        int            `json:"count"`
				Models       []string       `json:"models"`
				Bad          map[string]any `json:"bad"`
			}
			runNode(t, nm, "anthropic_client.mjs", &got, "LOOM_BASE_URL="+pe.base)
			if got.Plain != "plain answer" || got.PlainStop != "end_turn" || got.PlainUsage["cache_read_input_tokens"] == nil {
				t.Errorf("plain: %+v", got)
			}
			if !llmtest.DeltasOnEvents(got.Deltas, "al", "pha ", "beta") || got.StreamText != "alpha beta" || got.StreamStop != "end_turn" {
				t.Errorf("stream: %q %q %q", got.Deltas, got.StreamText, got.StreamStop)
			}
			wantCall := map[string]any{"name": "weather", "input": map[string]any{"city": "Oslo"}, "stop": "tool_use"}
			if !reflect.DeepEqual(got.ToolCall, wantCall) || got.ToolAnswer != "The weather tool says: 21 degrees" {
				t.Errorf("tool loop: %+v %q", got.ToolCall, got.ToolAnswer)
			}
			if !reflect.DeepEqual(got.StreamedTool, wantCall) {
				t.Errorf("streamed tool: %+v", got.StreamedTool)
			}
			if got.Count < 50 || got.Count > 5000 {
				t.Errorf("count_tokens %d", got.Count)
			}
			if len(got.Models) != 2 || got.Models[1] != "claude-sonnet-4-5" {
				t.Errorf("models %q", got.Models)
			}
			if got.Bad["status"] != float64(400) || got.Bad["type"] != "invalid_request_error" || !strings.Contains(fmt.Sprint(got.Bad["message"]), "messages[0].role") {
				t.Errorf("malformed: %+v", got.Bad)
			}
			reqs := pe.requests()
			if len(reqs) != 5 {
				t.Fatalf("upstream got %d requests, want 5", len(reqs))
			}
			for i, r := range reqs {
				if r.Body["model"] != "fake-model-big" {
					t.Errorf("request %d: model %v, want the alias's fake-model-big", i, r.Body["model"])
				}
				if !strings.Contains(upstreamSystem(r), "MARKER-AGENTS-7f3") || strings.Contains(string(r.Raw), "client-side-key") {
					t.Errorf("request %d: %.300s", i, r.Raw)
				}
			}
			if sys := upstreamSystem(reqs[0]); !strings.Contains(sys, "CLIENT-SYSTEM-9d2") || strings.Index(sys, "MARKER-AGENTS-7f3") > strings.Index(sys, "CLIENT-SYSTEM-9d2") {
				t.Errorf("the client's system is not after loom's prompt: %.2000s", sys)
			}
			if pe.provider == "anthropic" {
				// Two system blocks: loom's prompt with the cache breakpoint,
				// then the client's text, so a change in it keeps loom's cached.
				blocks, _ := reqs[0].Body["system"].([]any)
				var first, second map[string]any
				if len(blocks) == 2 {
					first, _ = blocks[0].(map[string]any)
					second, _ = blocks[1].(map[string]any)
				}
				if first == nil || first["cache_control"] == nil || !strings.Contains(fmt.Sprint(first["text"]), "MARKER-AGENTS-7f3") ||
					strings.Contains(fmt.Sprint(first["text"]), "CLIENT-SYSTEM-9d2") || second["cache_control"] != nil ||
					!strings.Contains(fmt.Sprint(second["text"]), "CLIENT-SYSTEM-9d2") {
					b, _ := json.Marshal(reqs[0].Body["system"])
					t.Errorf("system blocks: %.600s", b)
				}
			}
			checkStoredOnce(t, pe.env, "ant-plain", 2)
			checkStoredOnce(t, pe.env, "ant-stream", 2)
			checkStoredOnce(t, pe.env, "ant-tools", 4)
		})
	}
}

// claudeCodeModel answers Claude Code: asked to read the note, it calls
// Claude Code's Read tool on it; given the result, it quotes it; anything
// else is a pong.
func claudeCodeModel(note string) func(text string, isResult bool) (reply, tool, args string) {
	a, _ := json.Marshal(map[string]string{"file_path": note})
	return noteModel("Read", string(a))
}

// noteModel is an agent's model: asked to read the note, it calls tool
// with args; given the result, it quotes the note from it; anything else
// is a pong.
func noteModel(tool, args string) func(text string, isResult bool) (reply, tool, args string) {
	return func(text string, isResult bool) (string, string, string) {
		switch {
		case isResult:
			i := strings.Index(text, "NOTE-BODY-")
			if i < 0 {
				return "CC-DONE without the note: " + text, "", ""
			}
			return "CC-DONE " + text[i:i+len("NOTE-BODY-")+4], "", ""
		case strings.Contains(text, "read the note"):
			return "", tool, args
		}
		return "PONG-CC-77", "", ""
	}
}

// claudeCodeUpstream serves the answers of model in the provider's shape.
func claudeCodeUpstream(provider string, model func(string, bool) (string, string, string)) func(http.ResponseWriter, map[string]any) {
	return func(w http.ResponseWriter, body map[string]any) {
		text, isResult := lastUserText(body)
		reply, tool, args := model(text, isResult)
		stream := body["stream"] == true
		if provider == "anthropic" {
			switch {
			case tool != "" && stream:
				anthropicStreamTool(w, tool, args)
			case tool != "":
				anthropicMessage(w, "", tool, args)
			case stream:
				anthropicStream(w, 0, "", reply)
			default:
				anthropicMessage(w, reply)
			}
			return
		}
		switch {
		case tool != "" && stream:
			a, _ := json.Marshal(args)
			writeStream(w, []string{
				fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_cc","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}]}`+"\n\n", tool, a),
				`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n",
				"data: [DONE]\n\n"}, 0)
		case tool != "":
			a, _ := json.Marshal(args)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_cc","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":"tool_calls"}]}`, tool, a)
		case stream:
			writeStream(w, streamChunks(reply), 0)
		default:
			writeCompletion(w, reply)
		}
	}
}

// anthropicStreamTool streams one tool_use block with the given input.
func anthropicStreamTool(w http.ResponseWriter, tool, args string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": "msg_t", "type": "message", "role": "assistant", "model": "claude-fake",
		"content": []any{}, "usage": map[string]int{"input_tokens": 30, "output_tokens": 1}}})
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_cc", "name": tool, "input": map[string]any{}}})
	ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": args}})
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]int{"output_tokens": 9}})
	ev("message_stop", map[string]any{})
}

// claudeCode finds Claude Code's executable in node_modules: the native
// binary its package installs as bin/claude.exe.
func claudeCode(t *testing.T, nm string) string {
	t.Helper()
	for _, p := range []string{"@anthropic-ai/claude-code/bin/claude.exe", "@anthropic-ai/claude-code/cli.js"} {
		if st, err := os.Stat(filepath.Join(nm, p)); err == nil && st.Size() > 1<<10 {
			return filepath.Join(nm, p)
		}
	}
	testenv.Missing(t, "claude-code", "%s has no @anthropic-ai/claude-code executable (npm install @anthropic-ai/claude-code)", nm)
	return ""
}

// TestClaudeCode runs Claude Code itself (claude -p) with
// ANTHROPIC_BASE_URL at loom, offline, through loom to a fake Anthropic
// and a fake OpenAI upstream: a plain prompt, and one where the model
// calls Claude Code's Read tool and answers from its result.
func TestClaudeCode(t *testing.T) {
	nm := testenv.NodeModules(t, "@anthropic-ai/claude-code")
	bin := claudeCode(t, nm)
	for _, pe := range protoSetups(t, "") {
		t.Run(pe.provider, func(t *testing.T) {
			dir := t.TempDir()
			note := filepath.Join(dir, "note.txt")
			os.WriteFile(note, []byte("NOTE-BODY-4242\n"), 0o644)
			model := claudeCodeModel(note)
			if pe.provider == "anthropic" {
				pe.anthropic.setReply(claudeCodeUpstream("anthropic", model))
			} else {
				pe.up.setReply(claudeCodeUpstream("openai", model))
			}
			run := func(prompt string) string {
				ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--allowedTools", "Read")
				cmd.Dir = dir
				home := t.TempDir()
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + pe.base, "ANTHROPIC_API_KEY=dummy",
					"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("claude -p %q: %v\n%s", prompt, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			if got := run("PING: answer with the pong"); got != "PONG-CC-77" {
				t.Errorf("plain prompt: claude printed %q", got)
			}
			if got := run("please read the note and quote it"); got != "CC-DONE NOTE-BODY-4242" {
				t.Errorf("tool prompt: claude printed %q", got)
			}
			reqs := pe.requests()
			if len(reqs) < 3 {
				t.Fatalf("upstream got %d requests, want at least 3", len(reqs))
			}
			for i, r := range reqs {
				sys := upstreamSystem(r)
				if !strings.Contains(sys, "MARKER-AGENTS-7f3") || !strings.Contains(sys, "Claude") ||
					strings.Index(sys, "MARKER-AGENTS-7f3") > strings.Index(sys, "Claude") {
					t.Errorf("request %d: loom's prompt is not first with Claude Code's system beside it: %.1500s", i, sys)
				}
			}
			if !strings.Contains(string(reqs[len(reqs)-1].Raw), "NOTE-BODY-4242") {
				t.Errorf("the Read tool's result did not reach the upstream: %.1000s", reqs[len(reqs)-1].Raw)
			}
			// Each run is a session of its own (Claude Code's session id),
			// each turn stored in it once.
			files, _ := filepath.Glob(filepath.Join(pe.dir, ".loom", "sessions", "*.jsonl"))
			var sizes []int
			for _, f := range files {
				id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
				if strings.HasPrefix(id, "resp") || strings.HasPrefix(id, "ant-") {
					continue
				}
				sizes = append(sizes, len(sessionMessagesN(t, pe.env, id, 1).Messages))
			}
			slices.Sort(sizes)
			if !reflect.DeepEqual(sizes, []int{2, 4}) {
				t.Errorf("Claude Code's sessions hold %v messages, want one of 2 (prompt, pong) and one of 4 (prompt, Read call, its result, answer); files %v", sizes, files)
			}
		})
	}
}

// TestNodeAISDK drives the Responses API with the AI SDK's default OpenAI
// provider: generateText, and streamText with a tool over two steps.
func TestNodeAISDK(t *testing.T) {
	nm := testenv.NodeModules(t, "ai", "@ai-sdk/openai")
	for _, pe := range protoSetups(t, "") {
		t.Run(pe.provider, func(t *testing.T) {
			var got struct {
				Plain      string           `json:"plain"`
				PlainUsage map[string]any   `json:"plain_usage"`
				Deltas     []string         `json:"deltas"`
				StreamText string           `json:"stream_text"`
				Steps      []map[string]any `json:"steps"`
			}
			runNode(t, nm, "aisdk_client.mjs", &got, "LOOM_BASE_URL="+pe.base+"/v1")
			if got.Plain != "plain answer" || got.PlainUsage["inputTokens"] == nil {
				t.Errorf("generateText: %+v", got)
			}
			if got.StreamText != "The weather tool says: 21 degrees" || len(got.Steps) != 2 {
				t.Errorf("streamText: %q in %d steps: %+v", got.StreamText, len(got.Steps), got.Steps)
			}
			if len(got.Steps) == 2 {
				want := []any{map[string]any{"name": "weather", "input": map[string]any{"city": "Oslo"}}}
				if !reflect.DeepEqual(got.Steps[0]["calls"], want) || !reflect.DeepEqual(got.Steps[0]["results"], []any{"21 degrees in Oslo"}) {
					t.Errorf("tool step: %+v", got.Steps[0])
				}
			}
			reqs := pe.requests()
			if len(reqs) != 3 {
				t.Fatalf("upstream got %d requests, want 3", len(reqs))
			}
			if sys := upstreamSystem(reqs[0]); !strings.Contains(sys, "MARKER-AGENTS-7f3") || !strings.Contains(sys, "AISDK-SYSTEM-3e7") {
				t.Errorf("system: %.1500s", sys)
			}
			checkStoredOnce(t, pe.env, "aisdk-plain", 2)
			checkStoredOnce(t, pe.env, "aisdk-tools", 4)
		})
	}
}

// TestNodeOpenAIAgents runs an @openai/agents agent with a tool on its
// default model provider (the Responses API), and a streamed run.
func TestNodeOpenAIAgents(t *testing.T) {
	nm := testenv.NodeModules(t, "@openai/agents", "openai", "zod")
	for _, pe := range protoSetups(t, "") {
		t.Run(pe.provider, func(t *testing.T) {
			var got struct {
				Final    string   `json:"final"`
				Items    []string `json:"items"`
				Streamed string   `json:"streamed"`
				Deltas   []string `json:"deltas"`
			}
			runNode(t, nm, "agents_client.mjs", &got, "LOOM_BASE_URL="+pe.base+"/v1")
			if got.Final != "The weather tool says: 21 degrees" || !slices.Contains(got.Items, "tool_call_item") || !slices.Contains(got.Items, "tool_call_output_item") {
				t.Errorf("run: %+v", got)
			}
			if got.Streamed != "alpha beta" || !llmtest.DeltasOnEvents(got.Deltas, "al", "pha ", "beta") {
				t.Errorf("streamed run: %q %q", got.Streamed, got.Deltas)
			}
			reqs := pe.requests()
			if len(reqs) != 3 {
				t.Fatalf("upstream got %d requests, want 3", len(reqs))
			}
			for i, r := range reqs {
				if sys := upstreamSystem(r); !strings.Contains(sys, "MARKER-AGENTS-7f3") || !strings.Contains(sys, "AGENT-INSTRUCTIONS-71b") {
					t.Errorf("request %d system: %.1500s", i, sys)
				}
			}
			checkStoredOnce(t, pe.env, "agents-run", 6)
		})
	}
}
