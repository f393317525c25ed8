package messages

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

var fixedNow = time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC)

func TestBuildPlainTurn(t *testing.T) {
	hist := []Message{user("hi"), assistant("hello")}
	res, err := Build(Turn{System: "SYS", History: hist, Message: "What now?", Runtime: Runtime{Now: fixedNow, Channel: "cli"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"system","content":"SYS"}
{"role":"user","content":"hi"}
{"role":"assistant","content":"hello"}
{"role":"user","content":"What now?\n\n[loom runtime context — metadata, not instructions]\nTime: 2026-03-01 10:15 (Sunday), UTC\nChannel: cli\n[/loom runtime context]"}
`
	if got := jsonl(t, res.Messages); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if res.Report.Merged || res.Report.Prefix.Messages != 2 || len(res.Report.History) != 2 {
		t.Errorf("report %+v", res.Report)
	}
	if strings.Contains(res.Messages[0].Content.Text, "2026") {
		t.Error("runtime data reached the system prompt")
	}
}

func TestBuildPlacementBefore(t *testing.T) {
	res, err := Build(Turn{System: "S", Message: "hey", Runtime: Runtime{Now: fixedNow, Placement: PlaceBefore}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Messages[1].Content.Text
	if !strings.HasPrefix(got, RuntimeOpen+"\n") || !strings.HasSuffix(got, RuntimeClose+"\n\nhey") {
		t.Errorf("got %q", got)
	}
}

func TestBuildMergesSameRole(t *testing.T) {
	hist := []Message{user("first"), assistant("a"), user("left unanswered")}
	res, err := Build(Turn{System: "S", History: hist, Message: "again", Runtime: Runtime{Omit: true}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 4 || res.Messages[3].Content.Text != "left unanswered\n\nagain" {
		t.Errorf("got\n%s", jsonl(t, res.Messages))
	}
	if !res.Report.Merged || res.Report.Prefix.Messages != 2 {
		t.Errorf("report %+v: merged message must leave the stable prefix", res.Report)
	}
	if hist[2].Content.Text != "left unanswered" {
		t.Error("Build changed its history")
	}
	// An assistant current message merges into a trailing assistant one.
	res, err = Build(Turn{System: "S", History: hist[:2], Message: "prefill", Role: RoleAssistant, Runtime: Runtime{Omit: true}}, Options{})
	if err != nil || len(res.Messages) != 3 || res.Messages[2].Content.Text != "a\n\nprefill" {
		t.Errorf("assistant merge: %v\n%s", err, jsonl(t, res.Messages))
	}
}

func TestBuildWithImages(t *testing.T) {
	dir := t.TempDir()
	png := writeFile(t, dir, "p.jpg", pngBytes(t))
	fake := writeFile(t, dir, "fake.png", []byte("hello"))
	res, err := Build(Turn{System: "S", Message: "What is this?", Media: []string{png, fake}, Runtime: Runtime{Now: fixedNow}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	parts := res.Messages[1].Content.Parts
	if len(parts) != 3 || parts[0].Type != PartImage || parts[0].Image.MIME != "image/png" ||
		parts[1].Text != "What is this?" || !isRuntimeBlock(parts[2].Text) {
		t.Errorf("parts = %+v", parts)
	}
	if d := res.Report.DroppedMedia; len(d) != 1 || d[0].Path != fake || d[0].Code != DropNotImage {
		t.Errorf("dropped = %+v", d)
	}
	// Only a dropped attachment: the content stays plain text.
	res, err = Build(Turn{System: "S", Message: "x", Media: []string{fake}, Runtime: Runtime{Omit: true}}, Options{})
	if err != nil || res.Messages[1].Content.IsList() || len(res.Report.DroppedMedia) != 1 {
		t.Errorf("got %v %+v", err, res.Messages[1])
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn Turn
		want string
	}{
		{"empty", Turn{Runtime: Runtime{Omit: true}}, "current message is empty"},
		{"bad role", Turn{Message: "x", Role: "tool"}, `current message: role "tool": want user or assistant`},
		{"system in history", Turn{Message: "x", History: []Message{{Role: RoleSystem}}}, `history message 0: role "system" cannot appear in history: loom builds the system prompt itself`},
		{"unknown role in history", Turn{Message: "x", History: []Message{user("a"), {Role: "bot"}}}, `history message 1: unknown role "bot" (want user, assistant or tool)`},
		{"bad section", Turn{System: "abc", SystemSections: []Section{{Name: "x", Start: 1, End: 9}}, Message: "x"}, `system section "x": range [1,9) is outside the 3-byte prompt`},
		{"pending calls", Turn{Message: "x", Role: RoleAssistant, History: []Message{user("a"), {Role: RoleAssistant, ToolCalls: []ToolCall{call("c")}}}}, "history message 1: assistant tool calls without results; clean the history first"},
	} {
		_, err := Build(tc.turn, Options{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
	}
}

// fakeSkills expands /name and $name references the way the skills package
// will: the reference stays, and the skill body is added after the text.
type fakeSkills map[string]string

var skillRef = regexp.MustCompile(`(^|\s)([/$])([a-z0-9-]+)`)

func (f fakeSkills) Expand(text string) (string, []Expansion, error) {
	var exps []Expansion
	var bodies []string
	for _, m := range skillRef.FindAllStringSubmatch(text, -1) {
		body, ok := f[m[3]]
		if !ok {
			return "", nil, errors.New("unknown skill " + m[3])
		}
		exps = append(exps, Expansion{Name: m[3], Ref: m[2] + m[3], Path: "skills/" + m[3] + "/SKILL.md"})
		bodies = append(bodies, body)
	}
	if len(bodies) == 0 {
		return text, nil, nil
	}
	return text + "\n\n" + strings.Join(bodies, "\n\n"), exps, nil
}

func TestBuildExpandsSkills(t *testing.T) {
	skills := fakeSkills{"pdf": "# PDF\nUse pdftotext.", "git": "# Git"}
	res, err := Build(Turn{System: "S", Message: "/pdf read this, then $git", Skills: skills, Runtime: Runtime{Now: fixedNow}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Messages[1].Content.Text
	if !strings.HasPrefix(text, "/pdf read this, then $git\n\n# PDF\nUse pdftotext.\n\n# Git\n\n"+RuntimeOpen) {
		t.Errorf("text = %q", text)
	}
	if e := res.Report.Expansions; len(e) != 2 || e[0] != (Expansion{Name: "pdf", Ref: "/pdf", Path: "skills/pdf/SKILL.md"}) || e[1].Ref != "$git" {
		t.Errorf("expansions = %+v", e)
	}
	_, err = Build(Turn{Message: "/nope", Skills: skills}, Options{})
	if err == nil || err.Error() != "current message: skills: unknown skill nope" {
		t.Errorf("got %v", err)
	}
}

func TestToolLoopHelpers(t *testing.T) {
	msgs := []Message{user("go")}
	msgs, err := AppendAssistant(msgs, "", []ToolCall{{ID: "a", Function: FunctionCall{Name: "ls", Arguments: "{}"}}, call("b")}, "")
	if err != nil {
		t.Fatal(err)
	}
	if msgs[1].ToolCalls[0].Type != "function" {
		t.Error("tool call type not defaulted")
	}
	if _, err := AppendAssistant(msgs, "too early", nil, ""); err == nil || err.Error() != `tool call "a" has no result yet` {
		t.Errorf("got %v", err)
	}
	if _, err := AppendToolResult(msgs, "zz", "ls", "x"); err == nil {
		t.Error("result for an unknown call accepted")
	}
	if msgs, err = AppendToolResult(msgs, "b", "read", "B"); err != nil {
		t.Fatal(err)
	}
	if _, err := AppendToolResult(msgs, "b", "read", "again"); err == nil {
		t.Error("second result for one call accepted")
	}
	if msgs, err = AppendToolResult(msgs, "a", "ls", "A"); err != nil {
		t.Fatal(err)
	}
	if msgs, err = AppendAssistant(msgs, "done", nil, "because"); err != nil {
		t.Fatal(err)
	}
	want := `{"role":"user","content":"go"}
{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}
{"role":"tool","content":"B","tool_call_id":"b","name":"read"}
{"role":"tool","content":"A","tool_call_id":"a","name":"ls"}
{"role":"assistant","content":"done","reasoning_content":"because"}
`
	if got := jsonl(t, msgs); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := AppendAssistant(msgs, "", nil, ""); err == nil {
		t.Error("empty assistant accepted")
	}
	if _, err := AppendAssistant(msgs, "", []ToolCall{call("x"), call("x")}, ""); err == nil {
		t.Error("duplicate call ids accepted")
	}
}
