package messages

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"
)

// A Message is 112 bytes on a 64-bit machine: its rare fields behind one
// pointer. A request or a session holds messages by the ten thousand, and
// a short one's JSON is some 32 bytes, so every field added inline is paid
// for by each of them: at 160 bytes, decoding a request of tiny messages
// allocated some 6 times its body (gateway's TestDecodePeakMemory bounds
// it at 4).
func TestMessageSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size is pinned for 64-bit machines")
	}
	if got := unsafe.Sizeof(Message{}); got != 112 {
		t.Errorf("unsafe.Sizeof(Message{}) = %d, want 112", got)
	}
}

// The With methods leave the message they are called on, and every copy
// sharing its rare fields, as they were.
func TestWithLeavesCopies(t *testing.T) {
	extra := map[string]json.RawMessage{"x": json.RawMessage(`1`)}
	a := Message{Role: RoleTool, Content: TextContent("ok")}.WithToolCallID("c1").WithName("read").WithReasoning("r").WithExtra(extra)
	b := a // shares a's rare fields
	c := b.WithToolCallID("c2").WithName("write").WithReasoning("s").WithExtra(nil)
	if a.ToolCallID() != "c1" || a.Name() != "read" || a.Reasoning() != "r" || !reflect.DeepEqual(a.Extra(), extra) {
		t.Errorf("a changed: %q %q %q %v", a.ToolCallID(), a.Name(), a.Reasoning(), a.Extra())
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("b changed: %q %q %q %v", b.ToolCallID(), b.Name(), b.Reasoning(), b.Extra())
	}
	if c.ToolCallID() != "c2" || c.Name() != "write" || c.Reasoning() != "s" || c.Extra() != nil {
		t.Errorf("c = %q %q %q %v", c.ToolCallID(), c.Name(), c.Reasoning(), c.Extra())
	}
	// Set on an element of a list, through its pointer, as callers do.
	list := []Message{a, a}
	list[1] = list[1].WithToolCallID("c3")
	if list[0].ToolCallID() != "c1" || list[1].ToolCallID() != "c3" {
		t.Errorf("list = %q, %q", list[0].ToolCallID(), list[1].ToolCallID())
	}
}

// A message whose rare fields are all empty is equal to one that never
// had any, however it was built: the pointer is nil, not a pointer to
// empty fields.
func TestRareFieldsEmptyIsNil(t *testing.T) {
	plain := Message{Role: RoleUser, Content: TextContent("hi")}
	built := []Message{
		plain.WithToolCallID(""),
		plain.WithName("").WithReasoning("").WithExtra(map[string]json.RawMessage{}),
		plain.WithToolCallID("c1").WithName("n").WithToolCallID("").WithName(""),
		plain.WithExtra(map[string]json.RawMessage{"x": nil}).WithExtra(nil),
	}
	var decoded Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":"hi","name":"","tool_call_id":null}`), &decoded); err != nil {
		t.Fatal(err)
	}
	if err := decoded.unmarshalFull([]byte(`{"role":"user","content":"hi","reasoning_content":""}`)); err != nil {
		t.Fatal(err)
	}
	built = append(built, decoded)
	for i, m := range built {
		if m.rare != nil || !reflect.DeepEqual(m, plain) {
			t.Errorf("message %d: rare = %+v, want nil", i, m.rare)
		}
	}
	var zero Message
	if zero.ToolCallID() != "" || zero.Name() != "" || zero.Reasoning() != "" || zero.Extra() != nil {
		t.Error("the zero message has rare fields")
	}
}

// Decoding a known role gives its constant, allocating no string for it.
func TestDecodeInternsRoles(t *testing.T) {
	for _, r := range []Role{RoleUser, RoleAssistant, RoleTool, RoleSystem, RoleDeveloper} {
		data := []byte(`{"role":"` + string(r) + `","content":"x"}`)
		var m Message
		allocs := testing.AllocsPerRun(100, func() {
			m, _ = decodeFast(data)
		})
		if m.Role != r || allocs != 0 {
			t.Errorf("%s: role %q, %v allocations", r, m.Role, allocs)
		}
		if unsafe.StringData(string(m.Role)) != unsafe.StringData(string(r)) {
			t.Errorf("%s: the role is a new string, not the constant", r)
		}
	}
	if got := InternRole([]byte("robot")); got != "robot" {
		t.Errorf("InternRole(robot) = %q", got)
	}
}
