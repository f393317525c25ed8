package messages

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/golden"
)

// sampleTurn has every kind of message: text, an image, a tool call with
// its result, reasoning, and a runtime block.
func sampleTurn(t *testing.T) *Result {
	t.Helper()
	img := writeFile(t, t.TempDir(), "p.png", pngBytes(t))
	hist := []Message{
		user("list the files"),
		Message{Role: RoleAssistant, Content: TextContent("Looking."), ToolCalls: []ToolCall{call("c1")}}.WithReasoning("need ls"),
		result("c1", "a.txt\nb.txt"),
		assistant("Two files: a.txt and b.txt."),
	}
	res, err := Build(Turn{System: "You are a careful agent.", History: hist, Message: "And this picture?", Media: []string{img}, Runtime: Runtime{Now: fixedNow, ChatID: "42"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestOpenAIFormat(t *testing.T) {
	res := sampleTurn(t)
	params, err := res.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(params, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "openai", append(data, '\n'))

	// Each message has the shape Chat Completions defines for its role.
	var back []map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 6 {
		t.Fatalf("%d messages, want 6", len(back))
	}
	if back[0]["role"] != "system" || back[0]["content"] != "You are a careful agent." {
		t.Errorf("system: %+v", back[0])
	}
	calls, _ := back[2]["tool_calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["id"] != "c1" || calls[0].(map[string]any)["type"] != "function" ||
		calls[0].(map[string]any)["function"].(map[string]any)["name"] != "read" {
		t.Errorf("assistant tool call: %+v", back[2])
	}
	if tool := back[3]; tool["role"] != "tool" || tool["tool_call_id"] != "c1" || tool["content"] != "a.txt\nb.txt" {
		t.Errorf("tool: %+v", back[3])
	}
	parts, _ := back[5]["content"].([]any)
	if back[5]["role"] != "user" || len(parts) != 3 {
		t.Fatalf("user: %+v", back[5])
	}
	img, _ := parts[0].(map[string]any)["image_url"].(map[string]any)
	if img == nil || !strings.HasPrefix(img["url"].(string), "data:image/png;base64,iVBORw0KGgo") {
		t.Errorf("image part: %+v", parts[0])
	}
	if strings.Contains(string(data), "need ls") {
		t.Error("reasoning leaked into the OpenAI form")
	}
}

func TestAnthropicFormat(t *testing.T) {
	res := sampleTurn(t)
	req, err := res.Anthropic(true, "")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "anthropic", append(data, '\n'))

	if len(req.System) != 1 || req.System[0].Text != "You are a careful agent." || req.System[0].CacheControl == nil {
		t.Errorf("system: %+v", req.System)
	}
	// user, assistant(text+tool_use), user(tool_result), assistant, user
	roles := []string{}
	for _, m := range req.Messages {
		roles = append(roles, string(m.Role))
	}
	if strings.Join(roles, ",") != "user,assistant,user,assistant,user" {
		t.Errorf("roles %v: must alternate", roles)
	}
	if tu := req.Messages[1].Content[1]; tu.Type != "tool_use" || tu.ID != "c1" || tu.Name != "read" || string(tu.Input) != `{"path":"a"}` {
		t.Errorf("tool_use: %+v", req.Messages[1].Content)
	}
	if tr := req.Messages[2].Content[0]; tr.Type != "tool_result" || tr.ToolUseID != "c1" || tr.Content[0].Text != "a.txt\nb.txt" {
		t.Errorf("tool_result: %+v", req.Messages[2].Content)
	}
	if im := req.Messages[4].Content[0]; im.Type != "image" || im.Source == nil || im.Source.Type != "base64" || im.Source.MediaType != "image/png" || !strings.HasPrefix(im.Source.Data, "iVBORw0KGgo") {
		t.Errorf("image: %+v", req.Messages[4].Content[0])
	}
	// Breakpoints: the system prompt, and the last history message (the
	// assistant's answer), never the current message.
	if last := req.Messages[3].Content[0]; last.CacheControl == nil || last.CacheControl.Type != "ephemeral" {
		t.Error("no breakpoint after the last history message")
	}
	if n := strings.Count(string(data), `"cache_control"`); n != 2 {
		t.Errorf("%d breakpoints, want 2", n)
	}
	if n := countBreakpoints(req); n != 2 || n > MaxBreakpoints {
		t.Errorf("countBreakpoints = %d", n)
	}
	// Without history caching only the system prompt is marked.
	req, _ = res.Anthropic(false, "1h")
	data, _ = json.Marshal(req)
	if n := strings.Count(string(data), `"cache_control":{"type":"ephemeral","ttl":"1h"}`); n != 1 {
		t.Errorf("%d 1h breakpoints in %s", n, data)
	}
}

func TestAnthropicErrors(t *testing.T) {
	bad := []Message{{Role: RoleSystem, Content: TextContent("s")}, user("u"), {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "x", Function: FunctionCall{Name: "f", Arguments: "[1]"}}}}}
	if _, err := Anthropic(bad, AnthropicOptions{}); err == nil || err.Error() != `message 2 (assistant): tool call "x": arguments are not a JSON object` {
		t.Errorf("got %v", err)
	}
	if _, err := Anthropic([]Message{user("u"), assistant("")}, AnthropicOptions{}); err == nil || !strings.Contains(err.Error(), "empty message") {
		t.Errorf("got %v", err)
	}
}

func TestJSONFormat(t *testing.T) {
	res := sampleTurn(t)
	res.Report.Media[0].Path = "p.png" // the temp dir differs per run
	data, err := res.JSON()
	if err != nil {
		t.Fatal(err)
	}
	// Images are long; the golden file keeps their start.
	golden.Check(t, "json", []byte(shortenData(string(data))))
	rep, err := ReadReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Prefix != res.Report.Prefix || len(rep.History) != 4 {
		t.Errorf("read back %+v", rep.Prefix)
	}
	if _, err := ReadReport([]byte(`{"messages":[]}`)); err == nil {
		t.Error("a report without prefix accepted")
	}
}

func shortenData(s string) string {
	i := strings.Index(s, "base64,")
	if i < 0 {
		return s
	}
	j := strings.IndexByte(s[i:], '"')
	return s[:i+7+12] + "…" + s[i+j:]
}
