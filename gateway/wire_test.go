package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/loomctx/loom/messages"
)

// slowWire is the OpenAI encoder's form of m, HTML left unescaped.
func slowWire(t *testing.T, m messages.Message) []byte {
	t.Helper()
	wire, err := messages.OpenAIWith([]messages.Message{m}, messages.OpenAIOptions{KeepExtra: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wire[0]); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Every message the fast path takes is written byte for byte as the
// OpenAI encoder writes it; and the whole array, either path, means what
// encoding/json made of the encoder's output before (the old body).
func TestWireAgreesWithOpenAIEncoder(t *testing.T) {
	texts := []string{"", "plain", "<html> & \"quotes\" \\ \n\t \u2028 é 😀", "bad \xff utf8"}
	calls := [][]messages.ToolCall{nil,
		{messages.NewToolCall("c1", "weather", `{"city":"Oslo"}`)},
		{{ID: "c2", Type: "", Function: messages.FunctionCall{Name: "f", Arguments: "{}"}}},
		{{ID: "c3", Type: "custom", Function: messages.FunctionCall{Name: "g", Arguments: "not json"}}},
	}
	extras := []map[string]json.RawMessage{nil,
		{"x_vendor": json.RawMessage(`{"keep": [1, "two"]}`)},
		{"timestamp": json.RawMessage(`"yesterday"`)},
		{"reasoning_content": json.RawMessage(`"thought"`)},
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var all []messages.Message
	fast := 0
	for _, role := range []messages.Role{messages.RoleUser, messages.RoleAssistant, messages.RoleTool} {
		for _, text := range texts {
			for _, tc := range calls {
				for _, extra := range extras {
					for _, name := range []string{"", "ann"} {
						for _, id := range []string{"", "c1"} {
							for _, reasoning := range []string{"", "because"} {
								for _, list := range []bool{false, true} {
									m := messages.Message{Role: role, Content: messages.TextContent(text), ToolCalls: tc, Time: at}.
										WithToolCallID(id).WithName(name).WithReasoning(reasoning).WithExtra(extra)
									if list {
										m.Content = messages.Content{Parts: []messages.Part{{Type: messages.PartText, Text: text}}}
									}
									if role == messages.RoleAssistant && tc != nil && tc[0].Type == "custom" {
										continue
									}
									all = append(all, m)
									got, err := appendWireMessage(nil, m)
									if err != nil {
										t.Fatal(err)
									}
									if plainWire(m) {
										fast++
										if want := slowWire(t, m); !bytes.Equal(got, want) {
											t.Errorf("%+v:\n got %s\nwant %s", m, got, want)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if fast == 0 {
		t.Fatal("no message took the fast path")
	}
	body, err := appendWire(nil, all)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := messages.OpenAIWith(all, messages.OpenAIOptions{KeepExtra: true})
	if err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("not JSON: %v\n%.300s", err, body)
	}
	json.Unmarshal(old, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the array means something else than before")
	}
	t.Logf("%d of %d messages on the fast path", fast, len(all))
}
