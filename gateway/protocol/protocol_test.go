package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loomctx/loom/gateway/protocol"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
)

// The fixtures under testdata were written by hand from the providers'
// API references (OpenAI's Responses object and streaming events,
// Anthropic's Messages object and streaming events), not from this
// package's output.

func readJSON(t *testing.T, name string) any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return v
}

// subset reports whether every key of want is in got with a value that is
// itself a subset (lists element by element, same length).
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if gv, ok := g[k]; !ok || !subset(v, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}

// events splits an event stream into (event name, data) pairs, checking
// each event is "event: X\ndata: {…}\n\n" with X the data's type.
func events(t *testing.T, stream string) [][2]string {
	t.Helper()
	if !strings.HasSuffix(stream, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", stream)
	}
	var out [][2]string
	for _, ev := range strings.Split(strings.TrimSuffix(stream, "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(ev, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") || strings.Contains(data, "\n") {
			t.Fatalf("malformed event %q", ev)
		}
		out = append(out, [2]string{strings.TrimPrefix(name, "event: "), strings.TrimPrefix(data, "data: ")})
	}
	return out
}

func compareStreams(t *testing.T, fixture, got string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	want, have := events(t, string(data)), events(t, got)
	if len(want) != len(have) {
		t.Fatalf("%d events, want %d:\n%s", len(have), len(want), got)
	}
	for i := range want {
		w, h := decode(t, []byte(want[i][1])), decode(t, []byte(have[i][1]))
		if want[i][0] != have[i][0] || h.(map[string]any)["type"] != have[i][0] || !subset(w, h) {
			t.Errorf("event %d:\n got %s %s\nwant %s %s", i, have[i][0], have[i][1], want[i][0], want[i][1])
		}
	}
}

func reply() llm.Response {
	return llm.Response{Content: "Checking.", FinishReason: "tool_calls",
		ToolCalls: []messages.ToolCall{messages.NewToolCall("call_1", "get_weather", `{"city":"Paris"}`)},
		Usage:     llm.Usage{InputTokens: 36, OutputTokens: 87, CachedTokens: 10, CacheReported: true}}
}

func responsesTurn(t *testing.T) *protocol.Turn {
	t.Helper()
	turn, err := protocol.DecodeResponses([]byte(`{"model":"gpt-4.1","instructions":"Be brief.","input":"weather in Paris?","max_output_tokens":200,
		"temperature":0.2,"top_p":0.9,"tools":[{"type":"function","name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return turn
}

func TestResponseObject(t *testing.T) {
	meta := protocol.ResponseMeta{ID: "resp_abc", CreatedAt: 1741476542, Model: "gpt-4.1", Turn: responsesTurn(t)}
	got := decode(t, protocol.Response(meta, reply()))
	if want := readJSON(t, "response_object.json"); !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("response object:\n%s", g)
	}
}

func TestResponsesStream(t *testing.T) {
	var b bytes.Buffer
	s := protocol.NewResponsesStream(&b, protocol.ResponseMeta{ID: "resp_abc", CreatedAt: 1741476542, Model: "gpt-4.1", Turn: responsesTurn(t)})
	if s.Started() {
		t.Fatal("started before anything was written")
	}
	s.Text("Check")
	s.Text("ing.")
	r := reply()
	if err := s.Finish(r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "response.completed") {
		t.Fatal("Finish wrote the closing event; Complete must, after the turn is stored")
	}
	s.Complete()
	compareStreams(t, "responses_stream.txt", b.String())
}

func TestResponsesIncomplete(t *testing.T) {
	var b bytes.Buffer
	s := protocol.NewResponsesStream(&b, protocol.ResponseMeta{ID: "resp_x", Model: "m"})
	r := llm.Response{Content: "cut", FinishReason: "length"}
	s.Finish(r)
	s.Complete()
	evs := events(t, b.String())
	last := decode(t, []byte(evs[len(evs)-1][1]))
	want := map[string]any{"type": "response.incomplete", "response": map[string]any{"status": "incomplete", "incomplete_details": map[string]any{"reason": "max_output_tokens"}}}
	if evs[len(evs)-1][0] != "response.incomplete" || !subset(want, last) {
		t.Errorf("last event %s", evs[len(evs)-1][1])
	}
}

func TestDecodeResponsesItems(t *testing.T) {
	body := `{"model":"gpt-4.1","instructions":"Be brief.","input":[
		{"role":"developer","content":"Use metric units."},
		{"role":"user","content":[{"type":"input_text","text":"What is in this image?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A cat.","annotations":[]}]},
		{"type":"reasoning","id":"rs_1","summary":[]},
		{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_1","output":"18C"},
		{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"noon"}]},
		{"type":"item_reference","id":"msg_prev"}],
		"tool_choice":{"type":"function","name":"get_weather"},"parallel_tool_calls":false,
		"text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object"},"strict":true}},
		"store":false,"previous_response_id":"resp_prev","metadata":{"session_id":"s-1","user_id":"ann"},"stream":true}`
	var asked []string
	turn, err := protocol.DecodeResponses([]byte(body), func(id string) (messages.Message, error) {
		asked = append(asked, id)
		return messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent("earlier answer")}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []messages.Message{
		{Role: messages.RoleUser, Content: messages.Content{Parts: []messages.Part{{Type: messages.PartText, Text: "What is in this image?"},
			{Type: messages.PartImage, Image: &messages.Image{MIME: "image/png", Data: "iVBORw0KGgo="}}}}},
		{Role: messages.RoleAssistant, Content: messages.TextContent("A cat."), ToolCalls: []messages.ToolCall{
			messages.NewToolCall("call_1", "get_weather", `{"city":"Paris"}`), messages.NewToolCall("call_2", "get_time", `{}`)}},
		messages.Message{Role: messages.RoleTool, Content: messages.TextContent("18C")}.WithToolCallID("call_1"),
		messages.Message{Role: messages.RoleTool, Content: messages.TextContent("noon")}.WithToolCallID("call_2"),
		{Role: messages.RoleAssistant, Content: messages.TextContent("earlier answer")},
	}
	if !reflect.DeepEqual(turn.Messages, want) {
		g, _ := json.Marshal(turn.Messages)
		t.Errorf("messages: %s", g)
	}
	if !reflect.DeepEqual(turn.System, []string{"Be brief.", "Use metric units."}) || !reflect.DeepEqual(asked, []string{"msg_prev"}) {
		t.Errorf("system %q, resolved %q", turn.System, asked)
	}
	if !turn.Stream || !turn.NoStore || turn.PreviousResponseID != "resp_prev" || turn.Session != "s-1" || turn.User != "ann" ||
		turn.Parallel == nil || *turn.Parallel || turn.Call.ToolChoice != llm.ForceTool("get_weather") ||
		turn.Call.JSONSchema == nil || turn.Call.JSONSchema.Name != "answer" || !turn.Call.JSONSchema.Strict {
		t.Errorf("options: %+v", turn)
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	for body, param := range map[string]string{
		`[]`:            "",
		`{"model":"m"}`: "input",
		`{"input":7}`:   "input",
		`{"input":[{"role":"robot","content":"x"}]}`:                              "input[0].role",
		`{"input":[{"role":"user","content":[{"type":"input_file"}]}]}`:           "input[0].content[0].type",
		`{"input":[{"role":"user","content":[{"type":"input_image"}]}]}`:          "input[0].content[0].image_url",
		`{"input":[{"type":"function_call","name":"f"}]}`:                         "input[0]",
		`{"input":[{"type":"item_reference","id":"msg_1"}]}`:                      "input[0]",
		`{"input":"x","tools":[{"type":"function","parameters":{}}]}`:             "tools[0].name",
		`{"input":"x","tools":[{"type":"function","name":"f","parameters":[1]}]}`: "tools[0].parameters",
		`{"input":"x","tool_choice":"sometimes"}`:                                 "tool_choice",
		`{"input":"x","max_output_tokens":0}`:                                     "max_output_tokens",
		`{"input":"x","text":{"format":{"type":"json_schema"}}}`:                  "text.format.schema",
	} {
		_, err := protocol.DecodeResponses([]byte(body), nil)
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Param != param {
			t.Errorf("%s: %v, want an error on %q", body, err, param)
		}
	}
	for body, param := range map[string]string{
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`:     "max_tokens",
		`{"max_tokens":5,"messages":[]}`:                               "messages",
		`{"max_tokens":5,"messages":[{"role":"robot","content":"x"}]}`: "messages[0].role",
		// Every message's role is read before any content is.
		`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"document"}]},7]}`:                       "messages",
		`{"max_tokens":5,"messages":[{"role":"robot","content":"x"},{"role":5,"content":"x"}]}`:                 "messages",
		`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"document"}]}]}`:                         "messages[0].content[0].type",
		`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file"}}]}]}`:   "messages[0].content[0].source",
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305"}]}`:  "tools[0].type",
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"tool"}}`:             "tool_choice.name",
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":"x"}]}`: "tools[0].input_schema",
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f"}]}`:                    "tools[0].input_schema",
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"system":[{"type":"image"}]}`:               "system",
	} {
		_, err := protocol.DecodeMessages([]byte(body), false)
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Param != param {
			t.Errorf("%s: %v, want an error on %q", body, err, param)
		}
	}
}

// A request as Claude Code sends it: system blocks with a cache marker,
// a mid-conversation system turn, text with a reminder block, a tool
// round trip with thinking, and Claude Code's metadata.
func TestDecodeMessagesClaudeCode(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,
	"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Be careful.","cache_control":{"type":"ephemeral"}}],
	"messages":[
	 {"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"read a.txt"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
	 {"role":"system","content":[{"type":"text","text":"# Environment"}]},
	 {"role":"assistant","content":[{"type":"thinking","thinking":"I should read it.","signature":"sig-1"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"a.txt"}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"hello"}]},{"type":"tool_result","tool_use_id":"toolu_2","content":"denied","is_error":true},{"type":"text","text":"go on"}]}],
	"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}],
	"tool_choice":{"type":"any","disable_parallel_tool_use":true},"stop_sequences":["END"],"temperature":1,"top_k":5,
	"metadata":{"user_id":"{\"device_id\":\"d\",\"session_id\":\"2f7d3a73-9ea0-4694-bd9c-e8568ccb29b8\"}"},
	"thinking":{"type":"adaptive"},"context_management":{"edits":[]},"output_config":{"effort":"medium"}}`
	turn, err := protocol.DecodeMessages([]byte(body), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []messages.Message{
		{Role: messages.RoleUser, Content: messages.Content{Parts: []messages.Part{{Type: messages.PartText, Text: "<system-reminder>ctx</system-reminder>"},
			{Type: messages.PartText, Text: "read a.txt"}, {Type: messages.PartImage, Image: &messages.Image{MIME: "image/png", Data: "iVBORw0KGgo="}}}}},
		messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent("Reading."),
			ToolCalls: []messages.ToolCall{messages.NewToolCall("toolu_1", "Read", `{"file_path":"a.txt"}`)}}.
			WithReasoning("I should read it.").
			WithExtra(map[string]json.RawMessage{messages.AnthropicThinkingKey: json.RawMessage(`[{"type":"thinking","thinking":"I should read it.","signature":"sig-1"}]`)}),
		messages.Message{Role: messages.RoleTool, Content: messages.TextContent("hello")}.WithToolCallID("toolu_1"),
		messages.Message{Role: messages.RoleTool, Content: messages.TextContent("Error: denied")}.WithToolCallID("toolu_2"),
		{Role: messages.RoleUser, Content: messages.TextContent("go on")},
	}
	if !reflect.DeepEqual(turn.Messages, want) {
		g, _ := json.Marshal(turn.Messages)
		t.Errorf("messages: %s", g)
	}
	if !reflect.DeepEqual(turn.System, []string{"You are Claude Code.\n\nBe careful.", "# Environment"}) {
		t.Errorf("system %q", turn.System)
	}
	if turn.Session != "2f7d3a73-9ea0-4694-bd9c-e8568ccb29b8" || turn.User != "" || turn.Call.MaxTokens != 32000 || !turn.Stream ||
		turn.Call.ToolChoice.Mode != llm.ToolChoiceRequired || turn.Parallel == nil || *turn.Parallel ||
		!reflect.DeepEqual(turn.Stop, []string{"END"}) || string(turn.Call.Extra["top_k"]) != "5" || *turn.Call.Temperature != 1 ||
		len(turn.Call.Tools) != 1 || turn.Call.Tools[0].Name != "Read" || turn.Call.JSONSchema != nil {
		t.Errorf("options: %+v", turn)
	}
}

func TestMessageObject(t *testing.T) {
	r := llm.Response{Content: "I'll check.", FinishReason: "tool_calls",
		ToolCalls: []messages.ToolCall{messages.NewToolCall("toolu_01A09q90qw90lq917835lq9", "get_weather", `{"location": "San Francisco, CA"}`)},
		Usage:     llm.Usage{InputTokens: 2095 + 1800 + 100, OutputTokens: 503, CachedTokens: 1800, CacheWriteTokens: 100, CacheReported: true}}
	got := decode(t, protocol.Message(protocol.MessageMeta{ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Model: "claude-sonnet-4-5"}, r))
	if want := readJSON(t, "message_object.json"); !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("message object:\n%s", g)
	}
}

func TestMessagesStream(t *testing.T) {
	var b bytes.Buffer
	s := protocol.NewMessagesStream(&b, protocol.MessageMeta{ID: "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", Model: "claude-sonnet-4-5"})
	s.Text("Hello")
	s.Text("!")
	r := llm.Response{Content: "Hello!", FinishReason: "tool_use",
		ToolCalls: []messages.ToolCall{messages.NewToolCall("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", `{"location":"SF"}`)},
		Usage:     llm.Usage{InputTokens: 472, OutputTokens: 89}}
	s.Finish(r)
	if strings.Contains(b.String(), "message_stop") {
		t.Fatal("Finish wrote message_stop; Complete must, after the turn is stored")
	}
	s.Complete()
	compareStreams(t, "messages_stream.txt", b.String())
}

func TestStopReasons(t *testing.T) {
	for finish, want := range map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal",
		"end_turn": "end_turn", "stop_sequence": "stop_sequence", "": "end_turn"} {
		if got := protocol.StopReason(finish, 0); got != want {
			t.Errorf("StopReason(%q) = %q, want %q", finish, got, want)
		}
	}
	if got := protocol.StopReason("", 1); got != "tool_use" {
		t.Errorf("a reply with calls and no reason: %q", got)
	}
}

func TestErrorShapes(t *testing.T) {
	got := decode(t, protocol.OpenAIError("invalid_request_error", "", "input", "input: is required"))
	want := map[string]any{"error": map[string]any{"message": "input: is required", "type": "invalid_request_error", "param": "input", "code": nil}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OpenAI error %v", got)
	}
	got = decode(t, protocol.AnthropicError("not_found_error", `no workspace named "x"; served: a, b`))
	want = map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": `no workspace named "x"; served: a, b`}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Anthropic error %v", got)
	}
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
		413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 502: "api_error", 529: "overloaded_error"} {
		if got := protocol.AnthropicErrorType(status); got != typ {
			t.Errorf("AnthropicErrorType(%d) = %s, want %s", status, got, typ)
		}
	}
}

func TestModelLists(t *testing.T) {
	models := []protocol.Model{{ID: "gpt-4.1"}, {ID: "claude-sonnet-4-5", Target: "gpt-4.1"}}
	got := decode(t, protocol.OpenAIModels(models))
	want := map[string]any{"object": "list", "data": []any{
		map[string]any{"id": "gpt-4.1", "object": "model", "created": 0.0, "owned_by": "loom"},
		map[string]any{"id": "claude-sonnet-4-5", "object": "model", "created": 0.0, "owned_by": "loom"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OpenAI list %v", got)
	}
	got = decode(t, protocol.AnthropicModels(models))
	if !subset(map[string]any{"has_more": false, "first_id": "gpt-4.1", "last_id": "claude-sonnet-4-5",
		"data": []any{map[string]any{"type": "model", "id": "gpt-4.1"}, map[string]any{"type": "model", "id": "claude-sonnet-4-5"}}}, got) {
		t.Errorf("Anthropic list %v", got)
	}
}

// FuzzDecoders: no body makes a decoder panic, and an error is always a
// *FieldError.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{`{"input":"hi"}`, `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":null}]}]}]}`,
		`{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image"}]},{"type":"item_reference","id":"x"}]}`,
		`{"input":[{"role":"assistant","content":[{"type":"input_image","image_url":"data:x"}]}]}`, `{"system":[{"type":"text"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		resolve := func(id string) (messages.Message, error) {
			if id == "" {
				return messages.Message{}, errors.New("empty")
			}
			return messages.Message{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{messages.NewToolCall("c", "f", "{}")}}, nil
		}
		for _, err := range []error{func() error { _, err := protocol.DecodeResponses(body, resolve); return err }(),
			func() error { _, err := protocol.DecodeMessages(body, false); return err }()} {
			var fe *protocol.FieldError
			if err != nil && !errors.As(err, &fe) {
				t.Fatalf("%T: %v", err, err)
			}
		}
	})
}

// Tools loom's upstream cannot take (a provider-run web_search, Codex's
// namespace of tools) are left out of the call and named, not refused;
// function tools stay.
func TestResponsesToolsLeftOut(t *testing.T) {
	body := `{"model":"m","input":"hi","tools":[
		{"type":"function","name":"exec_command","description":"Run.","parameters":{"type":"object"}},
		{"type":"namespace","name":"multi_agent_v1","description":"Agents.","tools":[{"type":"function","name":"spawn","parameters":{"type":"object"}}]},
		{"type":"web_search","external_web_access":false}]}`
	turn, err := protocol.DecodeResponses([]byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(turn.Call.Tools) != 1 || turn.Call.Tools[0].Name != "exec_command" {
		t.Errorf("tools: %+v", turn.Call.Tools)
	}
	if !reflect.DeepEqual(turn.ToolsLeftOut, []string{"namespace multi_agent_v1", "web_search"}) {
		t.Errorf("left out: %q", turn.ToolsLeftOut)
	}
}
