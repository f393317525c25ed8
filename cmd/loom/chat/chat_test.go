package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/workspace"
)

var clock = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// fake answers chat turns with "Reply N" and extraction with the name the
// user gave, if any.
func fake(t *testing.T, format string) *llmtest.Server {
	s := llmtest.New(t, format)
	var mu sync.Mutex
	n := 0
	s.Default = func(r llmtest.Request) llmtest.Reply {
		switch r.Kind {
		case "extract":
			body, _ := json.Marshal(r.JSON["messages"])
			if strings.Contains(string(body), "My name is Ana") {
				return llmtest.Reply{Text: `{"user_instructions":null,"user_profile":[{"content":"The user is Ana.","supersedes_id":null}]}`}
			}
			return llmtest.Reply{Text: `{"user_instructions":null,"user_profile":null}`}
		case "consolidate":
			return llmtest.Reply{ToolCalls: []messages.ToolCall{messages.NewToolCall("", "save_memory", `{"history_entry":"[2026-03-01 10:00] Ana said hello.","memory_update":"# Memory\n- The user is Ana\n"}`)}}
		}
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		return llmtest.Reply{Text: fmt.Sprintf("Reply %d.", k)}
	}
	return s
}

type run struct {
	out, errOut string
	err         error
	dir         string
}

// systemText is the test workspace's AGENTS.md; the rendered system prompt
// holds it.
const systemText = "You are the test agent."

func runChat(t *testing.T, s *llmtest.Server, dir, input string, tweak func(*ChatOptions, *Config)) run {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "AGENTS.md")); err != nil {
		os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte(systemText+"\n"), 0o644)
	}
	ios, in, out, errOut := cmdutil.Test()
	in.WriteString(input)
	cfg := Config{LLM: s.Config(), ShutdownWait: 10 * time.Second}
	opts := &ChatOptions{
		IO: ios, Dir: dir, Channel: "cli", User: "ana",
		Signals: make(chan os.Signal),
		Now:     func() time.Time { return clock },
	}
	if tweak != nil {
		tweak(opts, &cfg)
	}
	opts.LoadConfig = func(*workspace.Workspace) (Config, error) { return cfg, nil }
	for _, k := range []string{llm.EnvBaseURL, llm.EnvModel, llm.EnvAPIKey, llm.EnvProvider} {
		t.Setenv(k, "")
	}
	err := chatRun(opts)
	return run{out.String(), errOut.String(), err, dir}
}

func chatRequests(s *llmtest.Server) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range s.Requests() {
		if r.Kind == "chat" {
			out = append(out, r)
		}
	}
	return out
}

func TestPipedTurns(t *testing.T) {
	for _, format := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(format, func(t *testing.T) {
			s := fake(t, format)
			dir := t.TempDir()
			r := runChat(t, s, dir, "Hello there\n\nMy name is Ana and I work at Acme.", nil)
			if r.err != nil {
				t.Fatalf("%v\n%s", r.err, r.errOut)
			}
			if r.out != "Reply 1.\nReply 2.\n" {
				t.Errorf("out = %q", r.out)
			}
			if strings.Count(r.errOut, "[tokens in ") != 2 || !strings.Contains(r.errOut, "cached 0 (0%)") {
				t.Errorf("status lines: %q", r.errOut)
			}
			reqs := chatRequests(s)
			if len(reqs) != 2 || reqs[1].Stream != true {
				t.Fatalf("%d chat requests", len(reqs))
			}
			got, _ := json.Marshal(withoutSystem(t, reqs[1].JSON["messages"]))
			want := `[{"content":"Hello there","role":"user"},{"content":"Reply 1.","role":"assistant"},{"content":"My name is Ana and I work at Acme.` + runtimeJSON + `","role":"user"}]`
			if format == llmtest.Anthropic {
				want = `[{"content":[{"text":"Hello there","type":"text"}],"role":"user"},{"content":[{"text":"Reply 1.","type":"text"}],"role":"assistant"},{"content":[{"text":"My name is Ana and I work at Acme.` + runtimeJSON + `","type":"text"}],"role":"user"}]`
			}
			if string(got) != want {
				t.Errorf("second request messages:\n%s\nwant\n%s", got, want)
			}
			sess := readSession(t, dir)
			var roles []string
			for _, m := range sess.Messages {
				roles = append(roles, string(m.Role)+":"+m.Content.String())
			}
			if strings.Join(roles, "|") != "user:Hello there|assistant:Reply 1.|user:My name is Ana and I work at Acme.|assistant:Reply 2." {
				t.Errorf("session = %v", roles)
			}
			// Extraction of the last turn finished before exit.
			st, err := memory.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ms, _ := st.List(context.Background(), memory.Query{User: "ana"})
			if len(ms) != 1 || ms[0].Content != "The user is Ana." || ms[0].Chat != "cli:ana" {
				t.Errorf("memories = %+v", ms)
			}
		})
	}
}

func TestNoEndpoint(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	for _, k := range []string{llm.EnvBaseURL, llm.EnvModel, llm.EnvAPIKey, llm.EnvProvider} {
		t.Setenv(k, "")
	}
	cmd := NewCmdChat(ios, nil)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs([]string{"-w", t.TempDir()})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "LOOM_LLM_BASE_URL") || !strings.Contains(err.Error(), "no model endpoint configured") {
		t.Errorf("err = %v", err)
	}
}

func TestNewArchivesThenClears(t *testing.T) {
	s := fake(t, llmtest.OpenAI)
	dir := t.TempDir()
	r := runChat(t, s, dir, "Hello there\n/new\nSecond session\n", nil)
	if r.err != nil || !strings.Contains(r.errOut, "new session started") {
		t.Fatalf("%v\n%s", r.err, r.errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "memory", "MEMORY.md")); string(b) != "# Memory\n- The user is Ana\n" {
		t.Errorf("MEMORY.md = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "memory", "HISTORY.md")); string(b) != "[2026-03-01 10:00] Ana said hello.\n\n" {
		t.Errorf("HISTORY.md = %q", b)
	}
	sess := readSession(t, dir)
	if len(sess.Messages) != 2 || sess.Messages[0].Content.String() != "Second session" {
		t.Errorf("session after /new = %+v", sess.Messages)
	}
	// The turn after /new does not replay the archived one.
	reqs := chatRequests(s)
	if msgs := reqs[len(reqs)-1].JSON["messages"].([]any); len(msgs) != 2 {
		t.Errorf("turn after /new sent %d messages", len(msgs))
	}
}

func TestNewKeepsSessionWhenArchivingFails(t *testing.T) {
	s := fake(t, llmtest.OpenAI)
	dir := t.TempDir()
	// A file where the memory folder should be: neither memory file can
	// be written, raw archive included.
	os.WriteFile(filepath.Join(dir, "memory"), []byte("not a folder"), 0o644)
	r := runChat(t, s, dir, "Hello there\n/new\n", nil)
	if !strings.Contains(r.errOut, "archiving failed, session kept") {
		t.Fatalf("errOut = %s", r.errOut)
	}
	sess := readSession(t, dir)
	if len(sess.Messages) != 2 {
		t.Errorf("session lost: %+v", sess.Messages)
	}
}

func TestConsolidationMovesPointer(t *testing.T) {
	s := fake(t, llmtest.OpenAI)
	dir := t.TempDir()
	var in strings.Builder
	for i := range 8 {
		fmt.Fprintf(&in, "Turn %d: tell me something about the quarterly churn figures in EMEA.\n", i)
	}
	r := runChat(t, s, dir, in.String(), func(_ *ChatOptions, c *Config) { c.ConsolidateThreshold = 120; c.ConsolidateKeep = 60 })
	if r.err != nil {
		t.Fatal(r.err)
	}
	sess := readSession(t, dir)
	if last := sess.Meta.LastConsolidated; last == 0 || sess.Messages[last].Role != "user" {
		t.Errorf("pointer = %d", last)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "memory", "HISTORY.md")); !strings.Contains(string(b), "Ana said hello.") {
		t.Errorf("HISTORY.md = %q", b)
	}
}

func TestCtrlCCancelsTheReplyOnly(t *testing.T) {
	s := fake(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Delay: 10 * time.Second, Text: "never"})
	dir := t.TempDir()
	intr := make(chan os.Signal, 1)
	go func() {
		for len(s.Requests()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		intr <- os.Interrupt
	}()
	r := runChat(t, s, dir, "Slow question\nSecond question\n", func(o *ChatOptions, c *Config) { o.Signals = intr; c.NoExtract = true })
	if r.err != nil || !strings.Contains(r.errOut, "[reply cancelled: interrupted; saved as cut]") {
		t.Fatalf("%v\n%s", r.err, r.errOut)
	}
	if r.out != "Reply 1.\n" {
		t.Errorf("out = %q", r.out)
	}
	reqs := chatRequests(s)
	got, _ := json.Marshal(withoutSystem(t, reqs[len(reqs)-1].JSON["messages"]))
	// The cancelled turn's question is kept and merged with the next.
	if want := `[{"content":"Slow question\n\nSecond question` + runtimeJSON + `","role":"user"}]`; string(got) != want {
		t.Errorf("messages = %s", got)
	}
}

func TestStreamCutKeepsUserMessage(t *testing.T) {
	s := fake(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Text: "partial answer that breaks", CutAfter: 3})
	dir := t.TempDir()
	r := runChat(t, s, dir, "Question\n", func(_ *ChatOptions, c *Config) { c.NoExtract = true })
	if !strings.Contains(r.errOut, "stream ended before the reply was complete") {
		t.Errorf("errOut = %s", r.errOut)
	}
	// The question is kept, and the reply as far as it came, marked as cut.
	sess := readSession(t, dir)
	if len(sess.Messages) != 2 || sess.Messages[0].Content.String() != "Question" {
		t.Fatalf("session = %+v", sess.Messages)
	}
	if why, ok := session.IsCut(sess.Messages[1]); !ok || !strings.Contains(why, "stream ended") || sess.Messages[1].Content.Text == "" {
		t.Errorf("partial reply %+v (cut %q %v)", sess.Messages[1], why, ok)
	}
}

func TestSkillAndCommands(t *testing.T) {
	s := fake(t, llmtest.OpenAI)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "skills", "pdf"), 0o755)
	os.WriteFile(filepath.Join(dir, "skills", "pdf", "SKILL.md"), []byte("---\nname: pdf\ndescription: Read PDF files.\n---\nUse pdftotext first.\n"), 0o644)
	r := runChat(t, s, dir, "/help\n/pdf summarise report.pdf\n/memory\n/prompt\n/nosuch\n/skill nosuch\n/exit\nnever sent\n", func(o *ChatOptions, c *Config) {
		c.NoExtract = true
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	reqs := chatRequests(s)
	if len(reqs) != 1 {
		t.Fatalf("%d chat requests", len(reqs))
	}
	msgs := reqs[0].JSON["messages"].([]any)
	// The skill goes in as `loom messages` puts it: messages.Build with the
	// builder's skills.
	user := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	if !strings.HasPrefix(user, `<skill_content name="pdf"`) || !strings.Contains(user, "Use pdftotext first.") ||
		!strings.HasSuffix(user, "/pdf summarise report.pdf"+runtimeText) {
		t.Errorf("user = %q", user)
	}
	for _, want := range []string{"/new ", "## memory/MEMORY.md", "(empty)", "## Memories (0)", "You are the test agent."} {
		if !strings.Contains(r.out, want) {
			t.Errorf("out lacks %q:\n%s", want, r.out)
		}
	}
	if !strings.Contains(r.errOut, `unknown command /nosuch`) || !strings.Contains(r.errOut, `/nosuch: no skill named "nosuch"`) {
		t.Errorf("errOut = %s", r.errOut)
	}
	// The session keeps what the user typed, not the skill body.
	sess := readSession(t, dir)
	if len(sess.Messages) == 0 || sess.Messages[0].Content.String() != "/pdf summarise report.pdf" {
		t.Errorf("session = %+v", sess.Messages)
	}
	// nanobot's channel:chat_id key, in the metadata nanobot reads.
	if sess.Meta.Key != "cli:ana" {
		t.Errorf("session key %q, want cli:ana", sess.Meta.Key)
	}
}

func TestSessionPath(t *testing.T) {
	got := []string{SessionPath("/w", "", ""), SessionPath("/w", "slack", "U1:x/y")}
	want := []string{filepath.FromSlash("/w/.loom/sessions/cli_default.jsonl"), filepath.FromSlash("/w/.loom/sessions/slack_U1_x_y.jsonl")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	// The key is nanobot's channel:chat_id; the file is that key made safe.
	if k := SessionKey("", ""); k != "cli:default" {
		t.Errorf("SessionKey = %q, want cli:default", k)
	}
	if k := SessionKey("telegram", "42"); k != "telegram:42" {
		t.Errorf("SessionKey = %q, want telegram:42", k)
	}
}

func readSession(t *testing.T, dir string) *messages.History {
	t.Helper()
	h, err := messages.ReadSessionFile(SessionPath(dir, "cli", "ana"), messages.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta == nil {
		h.Meta = &messages.SessionMeta{}
	}
	return h
}

// withoutSystem drops the system message of an OpenAI request's messages
// after checking it holds the workspace's AGENTS.md.
func withoutSystem(t *testing.T, v any) []any {
	t.Helper()
	msgs := v.([]any)
	if len(msgs) == 0 {
		return msgs
	}
	first := msgs[0].(map[string]any)
	if first["role"] != "system" {
		return msgs
	}
	if c, _ := first["content"].(string); !strings.Contains(c, systemText) {
		t.Errorf("system prompt lacks AGENTS.md: %q", c)
	}
	return msgs[1:]
}

// The runtime context of every test turn: it rides on the current message
// only, never in the system prompt or the saved history.
const runtimeText = "\n\n[loom runtime context — metadata, not instructions]\nTime: 2026-03-01 10:00 (Sunday), UTC\nChannel: cli\nChat ID: cli:ana\nSender ID: ana\n[/loom runtime context]"

// runtimeJSON is runtimeText as it appears inside a JSON string.
const runtimeJSON = `\n\n[loom runtime context — metadata, not instructions]\nTime: 2026-03-01 10:00 (Sunday), UTC\nChannel: cli\nChat ID: cli:ana\nSender ID: ana\n[/loom runtime context]`
