package messages

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func jsonl(t testing.TB, msgs []Message) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSONL(&b, msgs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func user(s string) Message      { return Message{Role: RoleUser, Content: TextContent(s)} }
func assistant(s string) Message { return Message{Role: RoleAssistant, Content: TextContent(s)} }
func call(id string) ToolCall {
	return ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: "read", Arguments: `{"path":"a"}`}}
}
func result(id, s string) Message {
	return Message{Role: RoleTool, Content: TextContent(s)}.WithToolCallID(id).WithName("read")
}

func TestClean(t *testing.T) {
	block := RuntimeBlock(Runtime{Now: time.Unix(0, 0), Channel: "cli"})
	in := []Message{
		result("old", "orphan from a cut window"),
		assistant("leading assistant"),
		user("hello\n\n" + block),
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{call("c1"), call("c2")}}.WithReasoning("r"),
		result("c1", strings.Repeat("é", 100)),
		result("zz", "answers nothing"),
		assistant(""),
		{Role: RoleUser, Content: Content{Parts: []Part{
			{Type: PartImage, Image: &Image{MIME: "image/png", Data: "AAAA"}},
			{Type: PartText, Text: "what is it?"},
			{Type: PartText, Text: block},
		}}},
		user(block),
		assistant("done"),
	}
	got, rep := Clean(in, CleanOptions{MaxToolChars: 60})
	want := []Message{
		user("hello"),
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{call("c1")}}.WithReasoning("r"),
		result("c1", strings.Repeat("é", 60-len("\n[… tool result cut by loom: 100 characters in all]")+2)+"\n[… tool result cut by loom: 100 characters in all]"),
		{Role: RoleUser, Content: Content{Parts: []Part{{Type: PartText, Text: "[image]"}, {Type: PartText, Text: "what is it?"}}}},
		assistant("done"),
	}
	// The marker holds one two-byte rune (…), so it is len-2 runes long.
	if n := utf8.RuneCountInString(got[2].Content.Text); n != 60 {
		t.Errorf("cut tool result is %d runes, want 60", n)
	}
	if g, w := jsonl(t, got), jsonl(t, want); g != w {
		t.Errorf("got\n%s\nwant\n%s", g, w)
	}
	wantRep := CleanReport{RuntimeBlocks: 3, Images: 1, ToolResultsCut: 1, EmptyDropped: 2, LeadingDropped: 1, OrphanResults: 2, UnansweredToolCalls: 1}
	if rep != wantRep {
		t.Errorf("report %+v\nwant   %+v", rep, wantRep)
	}
	if again, _ := Clean(got, CleanOptions{MaxToolChars: 60}); jsonl(t, again) != jsonl(t, got) {
		t.Errorf("not idempotent:\n%s", jsonl(t, again))
	}
	if in[2].Content.Text == "hello" || in[7].Content.Parts[0].Type != PartImage {
		t.Error("Clean changed its input")
	}
}

func TestCleanNoUserMessage(t *testing.T) {
	got, rep := Clean([]Message{assistant("a"), assistant("b")}, CleanOptions{})
	if len(got) != 0 || rep.LeadingDropped != 2 {
		t.Errorf("got %v, %+v", got, rep)
	}
}

func TestCleanDefaultCap(t *testing.T) {
	long := strings.Repeat("x", DefaultMaxToolChars+1)
	got, _ := Clean([]Message{user("u"), {Role: RoleAssistant, ToolCalls: []ToolCall{call("c")}}, result("c", long)}, CleanOptions{})
	if n := len(got[2].Content.Text); n != DefaultMaxToolChars+2 { // "…" is 3 bytes, 1 rune
		t.Errorf("cut to %d bytes", n)
	}
	got, _ = Clean([]Message{user("u"), {Role: RoleAssistant, ToolCalls: []ToolCall{call("c")}}, result("c", long)}, CleanOptions{MaxToolChars: -1})
	if got[2].Content.Text != long {
		t.Error("negative cap cut the result")
	}
}

// TestCleanThenRebuildKeepsPrefix is the caching round trip: an agent
// builds a turn, runs its tool loop, persists the cleaned turn, and builds
// the next turn on it. Every message the next turn sends before the new one
// must be byte for byte what the agent sent before, in the neutral and the
// OpenAI form; the only exception is the previous user message, whose
// runtime block and image are gone.
func TestCleanThenRebuildKeepsPrefix(t *testing.T) {
	dir := t.TempDir()
	img := writeFile(t, dir, "a.png", pngBytes(t))
	system := strings.Repeat("You are loom's test agent. ", 40)
	var history, loopSent []Message
	var prevReport Report
	userAt := -1
	for turn := range 4 {
		res, err := Build(Turn{
			System:  system,
			History: history,
			Message: fmt.Sprintf("question %d", turn),
			Media:   []string{img},
			Runtime: Runtime{Now: time.Date(2026, 3, 1, 10, turn, 0, 0, time.UTC), Channel: "cli", ChatID: "c"},
		}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if turn > 0 {
			if len(res.Messages) <= len(loopSent) {
				t.Fatalf("turn %d: %d messages, the last turn sent %d", turn, len(res.Messages), len(loopSent))
			}
			for i := range loopSent {
				if i == userAt {
					continue
				}
				was, is := forms(t, loopSent[i]), forms(t, res.Messages[i])
				if was != is {
					t.Errorf("turn %d, message %d changed:\nwas %v\nis  %v", turn, i, was, is)
				}
			}
			if d := CacheDiff(prevReport, res.Report); d.Changed {
				t.Errorf("turn %d: CacheDiff says %s", turn, d)
			}
		}
		// The tool loop: on even turns a tool call whose long result is cut
		// before it is sent, as Clean would cut it.
		msgs := res.Messages
		userAt = len(msgs) - 1
		if turn%2 == 0 {
			id := fmt.Sprintf("t%d", turn)
			if msgs, err = AppendAssistant(msgs, "", []ToolCall{call(id)}, "thinking"); err != nil {
				t.Fatal(err)
			}
			out := CutToolResult(strings.Repeat("data ", 5000), DefaultMaxToolChars)
			if msgs, err = AppendToolResult(msgs, id, "read", out); err != nil {
				t.Fatal(err)
			}
		}
		if msgs, err = AppendAssistant(msgs, "answer", nil, ""); err != nil {
			t.Fatal(err)
		}
		loopSent = msgs
		history, _ = Clean(msgs[1:], CleanOptions{})
		prevReport = res.Report
	}
}

// forms renders one message in the neutral and the OpenAI form.
func forms(t *testing.T, m Message) [2]string {
	t.Helper()
	oa, err := OpenAI([]Message{m})
	if err != nil {
		t.Fatal(err)
	}
	o, err := oa[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	n, err := marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return [2]string{string(n), string(o)}
}

func TestCutMiddle(t *testing.T) {
	c := newCounter(t)
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "line %d of the log, with ünïcode ✓\n", i)
	}
	s := b.String()
	total := c.Count(s)
	for _, max := range []int{total, total - 1, 5000, 200, 40} {
		got := CutMiddle(s, max, c)
		if n := c.Count(got); n > max {
			t.Errorf("max %d: %d tokens", max, n)
		}
		if !utf8.ValidString(got) {
			t.Errorf("max %d: invalid UTF-8", max)
		}
		if max == total {
			if got != s {
				t.Errorf("a text that fits was changed")
			}
			continue
		}
		head, tail, ok := strings.Cut(got, "\n\n[… ")
		if !ok || !strings.HasPrefix(s, head) || !strings.Contains(tail, " characters cut by loom from the middle of this message …]\n\n") {
			t.Fatalf("max %d: no head and marker: %.200q", max, got)
		}
		_, end, _ := strings.Cut(tail, "…]\n\n")
		if !strings.HasSuffix(s, end) || len(end) == 0 {
			t.Errorf("max %d: the tail is not the text's end", max)
		}
		// The marker's figure is the characters left out.
		var cut int
		fmt.Sscanf(tail, "%d", &cut)
		if kept := utf8.RuneCountInString(head) + utf8.RuneCountInString(end); kept+cut != utf8.RuneCountInString(s) {
			t.Errorf("max %d: %d kept + %d cut != %d", max, kept, cut, utf8.RuneCountInString(s))
		}
		if again := CutMiddle(got, max, c); again != got {
			t.Errorf("max %d: cutting again changed it", max)
		}
	}
	if got := CutMiddle(s, 3, c); !strings.HasPrefix(got, "[… ") {
		t.Errorf("nothing fits: %q", got)
	}
}
