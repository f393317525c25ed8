package messages

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/loomctx/loom/internal/golden"
)

// sampleTurn has every kind of message: text, an image, a tool call with
// its result, reasoning, and a runtime block.
func sampleTurn(t *testing.T) *Result {
	t.Helper()
	img := writeFile(t, t.TempDir(), "p.png", pngBytes(t))
	hist := []Message{
		user("list the files"),
		{Role: RoleAssistant, Content: TextContent("Looking."), ToolCalls: []ToolCall{call("c1")}, Reasoning: "need ls"},
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

	// The output reads back into the SDK's param types, message by message,
	// as the variant the schema requires.
	var back []openai.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 6 {
		t.Fatalf("%d messages, want 6", len(back))
	}
	if back[0].OfSystem == nil || back[0].OfSystem.Content.OfString.Value != "You are a careful agent." {
		t.Errorf("system: %+v", back[0])
	}
	a := back[2].OfAssistant
	if a == nil || len(a.ToolCalls) != 1 || a.ToolCalls[0].OfFunction.ID != "c1" || a.ToolCalls[0].OfFunction.Function.Name != "read" {
		t.Errorf("assistant tool call: %+v", back[2])
	}
	if tool := back[3].OfTool; tool == nil || tool.ToolCallID != "c1" || tool.Content.OfString.Value != "a.txt\nb.txt" {
		t.Errorf("tool: %+v", back[3])
	}
	u := back[5].OfUser
	if u == nil || len(u.Content.OfArrayOfContentParts) != 3 {
		t.Fatalf("user: %+v", back[5])
	}
	if img := u.Content.OfArrayOfContentParts[0].OfImageURL; img == nil || !strings.HasPrefix(img.ImageURL.URL, "data:image/png;base64,iVBORw0KGgo") {
		t.Errorf("image part: %+v", u.Content.OfArrayOfContentParts[0])
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

	// It reads back as a complete MessageNewParams once the caller's fields
	// are added.
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	generic["model"], generic["max_tokens"] = "claude-sonnet-4-5", 1024
	full, _ := json.Marshal(generic)
	var p anthropic.MessageNewParams
	if err := json.Unmarshal(full, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.System) != 1 || p.System[0].Text != "You are a careful agent." || p.System[0].CacheControl.Type != "ephemeral" {
		t.Errorf("system: %+v", p.System)
	}
	// user, assistant(text+tool_use), user(tool_result), assistant, user
	roles := []string{}
	for _, m := range p.Messages {
		switch {
		case m.OfUser != nil:
			roles = append(roles, "user")
		case m.OfAssistant != nil:
			roles = append(roles, "assistant")
		}
	}
	if strings.Join(roles, ",") != "user,assistant,user,assistant,user" {
		t.Errorf("roles %v: must alternate", roles)
	}
	tu := p.Messages[1].OfAssistant.Content[1].OfToolUse
	if tu == nil || tu.ID != "c1" || tu.Name != "read" {
		t.Errorf("tool_use: %+v", p.Messages[1].OfAssistant.Content)
	}
	tr := p.Messages[2].OfUser.Content[0].OfToolResult
	if tr == nil || tr.ToolUseID != "c1" || tr.Content[0].OfText.Text != "a.txt\nb.txt" {
		t.Errorf("tool_result: %+v", p.Messages[2].OfUser.Content)
	}
	im := p.Messages[4].OfUser.Content[0].OfImage
	if im == nil || im.Source.OfBase64 == nil || im.Source.OfBase64.MediaType != "image/png" || !strings.HasPrefix(im.Source.OfBase64.Data, "iVBORw0KGgo") {
		t.Errorf("image: %+v", p.Messages[4].OfUser.Content[0])
	}
	// Breakpoints: the system prompt, and the last history message (the
	// assistant's answer), never the current message.
	if last := p.Messages[3].OfAssistant.Content[0].OfText; last.CacheControl.Type != "ephemeral" {
		t.Error("no breakpoint after the last history message")
	}
	if n := strings.Count(string(data), `"cache_control"`); n != 2 {
		t.Errorf("%d breakpoints, want 2", n)
	}
	if n := countBreakpoints(req); n != 2 || n > MaxBreakpoints {
		t.Errorf("countBreakpoints = %d", n)
	}
	// Without history caching only the system prompt is marked.
	req, _ = res.Anthropic(false, anthropic.CacheControlEphemeralTTLTTL1h)
	data, _ = json.Marshal(req)
	if n := strings.Count(string(data), `"cache_control":{"ttl":"1h","type":"ephemeral"}`); n != 1 {
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
