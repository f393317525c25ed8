package consolidate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/golden"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/workspace"
)

var t0 = time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC)

func msg(role messages.Role, text string, at time.Time) messages.Message {
	return messages.Message{Role: role, Content: messages.TextContent(text), Time: at}
}

func history(n int) []messages.Message {
	var out []messages.Message
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Minute)
		out = append(out,
			msg("user", "Question number "+itoa(i)+" about the quarterly churn report.", at),
			msg("assistant", "Answer number "+itoa(i)+": churn fell to four percent in the EMEA region.", at),
		)
	}
	return out
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func workspaceFiles(t *testing.T, memoryText string) (consolidate.WorkspaceFiles, string) {
	t.Helper()
	dir := t.TempDir()
	if memoryText != "" {
		os.MkdirAll(filepath.Join(dir, "memory"), 0o755)
		os.WriteFile(filepath.Join(dir, "memory", "MEMORY.md"), []byte(memoryText), 0o644)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return consolidate.WorkspaceFiles{WS: ws}, dir
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "memory", name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func newConsolidator(t *testing.T, s *llmtest.Server, files consolidate.Files, timeout time.Duration) *consolidate.Consolidator {
	t.Helper()
	cfg := s.Config()
	if timeout > 0 {
		cfg.Timeout = timeout
	}
	c, err := llm.New(cfg, llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	return consolidate.New(consolidate.Options{
		Client: c, Files: files, Counter: llmtest.Counter{},
		Threshold: 200, Keep: 100,
		Now: func() time.Time { return time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC) },
	})
}

func save(entry, mem string) llmtest.Reply {
	b, _ := json.Marshal(map[string]string{"history_entry": entry, "memory_update": mem})
	return llmtest.Reply{ToolCalls: []messages.ToolCall{{ID: "c1", Function: messages.FunctionCall{Name: "save_memory", Arguments: string(b)}}}}
}

func TestPlanIsTokenBasedAndUserAligned(t *testing.T) {
	c := consolidate.New(consolidate.Options{Counter: llmtest.Counter{}, Threshold: 200, Keep: 100})
	msgs := history(6) // 12 messages
	per := c.Tokens(msgs[:2])
	if per < 30 || per > 60 {
		t.Fatalf("a turn is %d tokens; the test assumes 30..60", per)
	}
	if _, ok := c.Plan(msgs[:4], 0); ok {
		t.Errorf("4 messages (%d tokens) are under the threshold", c.Tokens(msgs[:4]))
	}
	end, ok := c.Plan(msgs, 0)
	if !ok || msgs[end].Role != "user" {
		t.Fatalf("end = %d ok %v", end, ok)
	}
	if kept := c.Tokens(msgs[end:]); kept > 100 || c.Tokens(msgs[end-2:]) <= 100 {
		t.Errorf("kept %d tokens from %d; the chunk should end at the first user turn that fits 100", kept, end)
	}
	// From the pointer on, below the threshold again: nothing to do.
	if _, ok := c.Plan(msgs, end); ok {
		t.Errorf("plan from %d still due", end)
	}
}

func TestChunkWritesBothFiles(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(save("[2026-03-01 10:15] Discussed churn in EMEA.", "# Memory\n- Works on churn reports\n"))
	files, dir := workspaceFiles(t, "# Memory\n- User name: Ana\n")
	c := newConsolidator(t, s, files, 0)
	msgs := history(6)
	last, outs, err := c.Maybe(context.Background(), msgs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || last != outs[0].To || last == 0 || outs[0].Archived || !outs[0].MemoryChanged || !outs[0].Forced {
		t.Fatalf("last %d outcomes %+v", last, outs)
	}
	if got := read(t, dir, "MEMORY.md"); got != "# Memory\n- Works on churn reports\n" {
		t.Errorf("MEMORY.md = %q", got)
	}
	if got := read(t, dir, "HISTORY.md"); got != "[2026-03-01 10:15] Discussed churn in EMEA.\n\n" {
		t.Errorf("HISTORY.md = %q", got)
	}
	r := s.Requests()[0]
	tc, _ := json.Marshal(r.JSON["tool_choice"])
	if string(tc) != `{"function":{"name":"save_memory"},"type":"function"}` {
		t.Errorf("tool_choice = %s", tc)
	}
	msgsSent := r.JSON["messages"].([]any)
	golden.Check(t, "chunk_user_message", []byte(msgsSent[1].(map[string]any)["content"].(string)))
}

func TestArgumentShapes(t *testing.T) {
	for name, args := range map[string]string{
		"object":         `{"history_entry":"[2026-03-01 10:15] E.","memory_update":"M"}`,
		"list":           `[{"history_entry":"[2026-03-01 10:15] E.","memory_update":"M"}]`,
		"string":         `"{\"history_entry\":\"[2026-03-01 10:15] E.\",\"memory_update\":\"M\"}"`,
		"non-string mem": `{"history_entry":"[2026-03-01 10:15] E.","memory_update":{"facts":["M"]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.OpenAI)
			s.Push(llmtest.Reply{ToolCalls: []messages.ToolCall{{ID: "c1", Function: messages.FunctionCall{Name: "save_memory", Arguments: args}}}})
			files, dir := workspaceFiles(t, "")
			out, err := newConsolidator(t, s, files, 0).Archive(context.Background(), history(2), 0)
			if err != nil || out.Archived {
				t.Fatalf("out %+v err %v", out, err)
			}
			wantMem := "M\n"
			if name == "non-string mem" {
				wantMem = `{"facts":["M"]}` + "\n"
			}
			if got := read(t, dir, "MEMORY.md"); got != wantMem {
				t.Errorf("MEMORY.md = %q", got)
			}
			if got := read(t, dir, "HISTORY.md"); got != "[2026-03-01 10:15] E.\n\n" {
				t.Errorf("HISTORY.md = %q", got)
			}
		})
	}
}

func TestForcedChoiceRejectedFallsBackToAuto(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(
		llmtest.Reply{Status: 400, Message: `tool_choice should be ["none", "auto"]`},
		save("[2026-03-01 10:15] E1.", "M1"),
		save("[2026-03-01 10:16] E2.", "M2"),
	)
	files, _ := workspaceFiles(t, "")
	c := newConsolidator(t, s, files, 0)
	for range 2 {
		out, err := c.Archive(context.Background(), history(2), 0)
		if err != nil || out.Archived || out.Forced {
			t.Fatalf("out %+v err %v", out, err)
		}
	}
	var choices []string
	for _, r := range s.Requests() {
		b, _ := json.Marshal(r.JSON["tool_choice"])
		choices = append(choices, string(b))
	}
	want := []string{`{"function":{"name":"save_memory"},"type":"function"}`, `"auto"`, `"auto"`}
	if strings.Join(choices, " ") != strings.Join(want, " ") {
		t.Errorf("tool_choice sequence = %v, want %v", choices, want)
	}
}

// Every fault ends with the chunk in HISTORY.md raw and MEMORY.md as it was.
func TestFaultsArchiveRaw(t *testing.T) {
	prose := llmtest.Reply{Text: "I have noted the conversation."}
	bad := llmtest.Reply{ToolCalls: []messages.ToolCall{{ID: "c1", Function: messages.FunctionCall{Name: "save_memory", Arguments: `{"history_entry": "[2026`}}}}
	empty := llmtest.Reply{ToolCalls: []messages.ToolCall{{ID: "c1", Function: messages.FunctionCall{Name: "save_memory", Arguments: `{"history_entry": "", "memory_update": null}`}}}}
	var fivexx []llmtest.Reply
	for range 9 { // 3 attempts × (1 + 2 retries)
		fivexx = append(fivexx, llmtest.Reply{Status: 500, Message: "boom"})
	}
	var slow []llmtest.Reply
	for range 9 {
		slow = append(slow, llmtest.Reply{Delay: time.Second})
	}
	for name, tc := range map[string]struct {
		replies  []llmtest.Reply
		requests int
	}{
		"prose":     {[]llmtest.Reply{prose, prose, prose}, 3},
		"malformed": {[]llmtest.Reply{bad, bad, bad}, 3},
		"empty":     {[]llmtest.Reply{empty, prose, bad}, 3},
		"5xx":       {fivexx, 9},
		"timeout":   {slow, 9},
		"429":       {[]llmtest.Reply{{Status: 429, Header: map[string]string{"Retry-After": "1"}}, prose, prose, prose}, 4},
	} {
		t.Run(name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.OpenAI)
			s.Push(tc.replies...)
			files, dir := workspaceFiles(t, "# Memory\n- User name: Ana\n")
			timeout := 10 * time.Second
			if name == "timeout" {
				timeout = 50 * time.Millisecond
			}
			c := newConsolidator(t, s, files, timeout)
			msgs := history(6)
			last, outs, err := c.Maybe(context.Background(), msgs, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 1 || !outs[0].Archived || outs[0].Attempts != 3 || last != outs[0].To {
				t.Fatalf("last %d outcomes %+v", last, outs)
			}
			if n := len(s.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if got := read(t, dir, "MEMORY.md"); got != "# Memory\n- User name: Ana\n" {
				t.Errorf("MEMORY.md changed: %q", got)
			}
			want := "[2026-03-02 09:30] [RAW] " + itoa(last) + " messages\n" + consolidate.Transcript(msgs[:last]) + "\n\n"
			if got := read(t, dir, "HISTORY.md"); got != want {
				t.Errorf("HISTORY.md = %q\nwant %q", got, want)
			}
			if !strings.Contains(want, "[2026-03-01 10:15] USER: Question number 0 about") {
				t.Errorf("transcript lost the first message: %q", want)
			}
		})
	}
}

// failingFiles fails the write named by fail.
type failingFiles struct {
	mem, hist string
	fail      string
}

func (f *failingFiles) ReadMemory() (string, error) { return f.mem, nil }
func (f *failingFiles) WriteMemory(s string) error {
	if f.fail == "memory" {
		return errors.New("disk full")
	}
	f.mem = s
	return nil
}
func (f *failingFiles) AppendHistory(s string) error {
	if f.fail == "history" {
		return errors.New("disk full")
	}
	f.hist += s
	return nil
}

func (f *failingFiles) Lock(context.Context, time.Duration) (func(), error) { return func() {}, nil }

func TestWriteFailureKeepsPointer(t *testing.T) {
	for _, fail := range []string{"memory", "history"} {
		t.Run(fail, func(t *testing.T) {
			s := llmtest.New(t, llmtest.OpenAI)
			s.Push(save("[2026-03-01 10:15] E.", "M"))
			files := &failingFiles{mem: "old", fail: fail}
			c := newConsolidator(t, s, files, 0)
			last, _, err := c.Maybe(context.Background(), history(6), 0)
			if err == nil || last != 0 {
				t.Errorf("last %d err %v; want pointer 0 and an error", last, err)
			}
			if fail == "memory" && (files.mem != "old" || files.hist != "") {
				t.Errorf("partial write: %+v", files)
			}
		})
	}
}

func TestAnthropicToolUse(t *testing.T) {
	s := llmtest.New(t, llmtest.Anthropic)
	s.Push(save("[2026-03-01 10:15] E.", "M"))
	files, dir := workspaceFiles(t, "")
	out, err := newConsolidator(t, s, files, 0).Archive(context.Background(), history(1), 0)
	if err != nil || out.Archived {
		t.Fatalf("out %+v err %v", out, err)
	}
	if read(t, dir, "MEMORY.md") != "M\n" {
		t.Errorf("MEMORY.md = %q", read(t, dir, "MEMORY.md"))
	}
	tc, _ := json.Marshal(s.Requests()[0].JSON["tool_choice"])
	if string(tc) != `{"name":"save_memory","type":"tool"}` {
		t.Errorf("tool_choice = %s", tc)
	}
}

func TestTranscript(t *testing.T) {
	msgs := []messages.Message{
		msg("user", "Remind me I like tea", t0),
		{Role: "assistant", ToolCalls: []messages.ToolCall{{ID: "c1", Function: messages.FunctionCall{Name: "write_file"}}}, Time: t0},
		messages.Message{Role: "tool", Content: messages.TextContent("ok")}.WithToolCallID("c1"),
		{Role: "assistant"},
	}
	want := "[2026-03-01 10:15] USER: Remind me I like tea\n[2026-03-01 10:15] ASSISTANT [tools: write_file]\n[?] TOOL: ok"
	if got := consolidate.Transcript(msgs); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
