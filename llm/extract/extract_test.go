package extract_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/golden"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/extract"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
)

func openStore(t *testing.T) *memory.SQLite {
	t.Helper()
	var n atomic.Int64
	st, err := memory.Open(t.TempDir(),
		memory.WithIDs(func() string { return fmt.Sprintf("m%d", n.Add(1)) }),
		memory.WithNow(func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, int(n.Load()), time.UTC) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func reply(out string) llmtest.Reply { return llmtest.Reply{Text: out} }

func conversation(last string) []messages.Message {
	return []messages.Message{
		{Role: "user", Content: messages.TextContent("Who is Christophe Martin?")},
		{Role: "assistant", Content: messages.TextContent("Christophe Martin is the CTO of Acme; the user is asking about him.")},
		{Role: "user", Content: messages.TextContent(last)},
	}
}

func active(t *testing.T, st memory.Store) []memory.Memory {
	t.Helper()
	ms, err := st.List(context.Background(), memory.Query{AllUsers: true})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestExtractRequestAndWrite(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	st := openStore(t)
	ctx := context.Background()
	if _, err := st.Add(ctx,
		memory.NewMemory{Category: "personal_fact", Content: "The user is Alex.", User: "u1"},
		memory.NewMemory{Category: "global_rule", Content: "Answer in French.", User: "u1"},
	); err != nil {
		t.Fatal(err)
	}
	s.Push(reply(`{"user_instructions":[{"content":"Always answer in English.","supersedes_id":"m2"}],"user_profile":null}`))
	ex := extract.New(extract.Options{Client: mustClient(t, s), Store: st})
	r, err := ex.Extract(ctx, extract.Job{Chat: "c1", User: "u1", Messages: conversation("From now on, always answer in English.")})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Added) != 1 || r.Added[0].Chat != "c1" || r.Added[0].Category != "global_rule" || r.Added[0].User != "u1" {
		t.Errorf("added = %+v", r.Added)
	}
	got := active(t, st)
	if len(got) != 2 || got[0].Content != "Always answer in English." || got[1].Content != "The user is Alex." {
		t.Errorf("active memories = %+v", got)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	body := reqs[0].JSON
	msgs := body["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != extract.SystemPrompt() {
		t.Fatalf("messages = %v", msgs)
	}
	user := msgs[1].(map[string]any)["content"].(string)
	// The assistant's claim about Christophe must not reach the extractor.
	if strings.Contains(user, "CTO") {
		t.Errorf("assistant text was sent by default:\n%s", user)
	}
	golden.Check(t, "user_message", []byte(user))
	rf, _ := json.Marshal(body["response_format"])
	if !strings.Contains(string(rf), `"name":"memories"`) || !strings.Contains(string(rf), `"type":"json_schema"`) {
		t.Errorf("response_format = %s", rf)
	}
	if body["temperature"] != 0.0 {
		t.Errorf("temperature = %v", body["temperature"])
	}
}

func TestIncludeAssistant(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(reply(`{"user_instructions":null,"user_profile":null}`))
	ex := extract.New(extract.Options{Client: mustClient(t, s), Store: openStore(t), IncludeAssistant: true})
	if _, err := ex.Extract(context.Background(), extract.Job{Messages: conversation("thanks, noted")}); err != nil {
		t.Fatal(err)
	}
	msgs := s.Requests()[0].JSON["messages"].([]any)
	body := msgs[1].(map[string]any)["content"].(string)
	if !strings.Contains(body, "<message role=\"assistant\">\nChristophe Martin is the CTO") {
		t.Errorf("assistant message missing: %s", body)
	}
}

func mustClient(t *testing.T, s *llmtest.Server) llm.Client {
	t.Helper()
	c, err := llm.New(s.Config(), llmtest.Options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSkipShort(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	ex := extract.New(extract.Options{Client: mustClient(t, s), Store: openStore(t)})
	for _, text := range []string{"ok", " k ", "hi", "👍👍"} {
		r, err := ex.Extract(context.Background(), extract.Job{Messages: conversation(text)})
		if err != nil || r.Skipped == "" {
			t.Errorf("%q: skipped %q err %v", text, r.Skipped, err)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d requests for short messages", n)
	}
}

func TestUnknownSupersedesReported(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	st := openStore(t)
	ctx := context.Background()
	st.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: "The user is Alex.", User: "u1"})
	s.Push(reply(`{"user_instructions":null,"user_profile":[
		{"content":"The user is Sam.","supersedes_id":"m1"},
		{"content":"The user works at Acme.","supersedes_id":"m99"},
		{"content":"The user lives in Lyon.","supersedes_id":"m1"},
		{"content":"   ","supersedes_id":null}]}`))
	ex := extract.New(extract.Options{Client: mustClient(t, s), Store: st})
	r, err := ex.Extract(ctx, extract.Job{Chat: "c9", User: "u1", Messages: conversation("Actually my name is Sam, I work at Acme and live in Lyon.")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m99", "m1"}; strings.Join(r.UnknownSupersedes, ",") != strings.Join(want, ",") {
		t.Errorf("unknown = %v, want %v", r.UnknownSupersedes, want)
	}
	if r.Invalid != 1 || len(r.Added) != 3 {
		t.Errorf("invalid %d added %d", r.Invalid, len(r.Added))
	}
	var contents []string
	for _, m := range active(t, st) {
		contents = append(contents, m.Content)
	}
	// Newest first; Alex is superseded by Sam, the others are kept as new.
	if got := strings.Join(contents, "|"); got != "The user lives in Lyon.|The user works at Acme.|The user is Sam." {
		t.Errorf("active = %s", got)
	}
}

func TestSchemaRejectedFallsBackToText(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(
		llmtest.Reply{Status: 400, Message: "response_format json_schema is not supported by this model"},
		reply("Sure! Here is what I found:\n```json\n{\"user_instructions\": null, \"user_profile\": [\"The user is a data engineer.\"]}\n```\nLet me know."),
	)
	st := openStore(t)
	ex := extract.New(extract.Options{Client: mustClient(t, s), Store: st})
	r, err := ex.Extract(context.Background(), extract.Job{Messages: conversation("I'm a data engineer by the way.")})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Added) != 1 || r.Added[0].Content != "The user is a data engineer." || r.Added[0].Category != "personal_fact" {
		t.Errorf("added = %+v", r.Added)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[1].JSON["response_format"] != nil {
		t.Fatalf("second request still asks for a schema: %v", reqs[len(reqs)-1].JSON["response_format"])
	}
	if b, _ := json.Marshal(reqs[1].JSON["messages"]); !strings.Contains(string(b), "Reply with the JSON object only") {
		t.Errorf("fallback request lacks the JSON instruction")
	}
}

func TestFaultsLeaveMemoriesUnchanged(t *testing.T) {
	cases := map[string][]llmtest.Reply{
		"server errors": {{Status: 500}, {Status: 502}, {Status: 503}},
		"prose":         {reply("I don't think anything needs saving.")},
		"malformed":     {reply(`{"user_instructions": [{"content": "Never use tables.", "supersedes_id": null}`)},
		"timeout":       {{Delay: time.Second}, {Delay: time.Second}, {Delay: time.Second}},
	}
	for name, replies := range cases {
		t.Run(name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.OpenAI)
			s.Push(replies...)
			st := openStore(t)
			st.Add(context.Background(), memory.NewMemory{Category: "global_rule", Content: "Answer in French."})
			cfg := s.Config()
			if name == "timeout" {
				cfg.Timeout = 50 * time.Millisecond
			}
			c, _ := llm.New(cfg, llmtest.Options(nil)...)
			ex := extract.New(extract.Options{Client: c, Store: st})
			_, err := ex.Extract(context.Background(), extract.Job{Messages: conversation("Never use tables, ever.")})
			if err == nil {
				t.Fatal("no error")
			}
			if got := active(t, st); len(got) != 1 || got[0].Content != "Answer in French." {
				t.Errorf("memories changed: %+v", got)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"user_instructions":null,"user_profile":null}`, `{"user_instructions":null,"user_profile":null}`},
		{"```json\n{\"user_profile\":[{\"content\":\"A.\",\"supersedes_id\":\"m1\"}]}\n```", `{"user_instructions":null,"user_profile":[{"content":"A.","supersedes_id":"m1"}]}`},
		{`Thinking {not json} then {"user_instructions":{"content":"B."}} trailing`, `{"user_instructions":[{"content":"B.","supersedes_id":""}],"user_profile":null}`},
		{`{"user_profile":[{"content":"C.","supersedes_id":7}, 5, "D."]}`, `{"user_instructions":null,"user_profile":[{"content":"C.","supersedes_id":"7"},{"content":"D.","supersedes_id":""}]}`},
	} {
		out, err := extract.Parse(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		got, _ := json.Marshal(out)
		if string(got) != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "nothing to save", `{"other": 1}`, `[1,2]`} {
		if _, err := extract.Parse(bad); !errors.Is(err, extract.ErrNoJSON) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"user_instructions":[{"content":"x","supersedes_id":null}],"user_profile":null}`)
	f.Add("```\n{\"user_profile\":\"x\"}\n```")
	f.Fuzz(func(t *testing.T, s string) { extract.Parse(s) })
}

// Extraction for one user never replaces a workspace-wide memory or
// another user's: the supersedes_id is reported and the item stored as a
// new memory of the user's own scope, and the rule stays for everyone.
func TestExtractKeepsToItsScope(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	st := openStore(t)
	ctx := context.Background()
	if _, err := st.Add(ctx,
		memory.NewMemory{Category: "global_rule", Content: "Answer in French."},
		memory.NewMemory{Category: "personal_fact", Content: "The user is Bob.", User: "bob"},
	); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"alex", ""} {
		s.Push(reply(`{"user_instructions":[{"content":"Answer in English.","supersedes_id":"m1"}],
			"user_profile":[{"content":"The user is Sam.","supersedes_id":"m2"}]}`))
		ex := extract.New(extract.Options{Client: mustClient(t, s), Store: st})
		r, err := ex.Extract(ctx, extract.Job{Chat: "c-" + user, User: user, Messages: conversation("Answer in English, I am Sam.")})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(r.UnknownSupersedes, ",") != "m1,m2" {
			t.Errorf("user %q: unknown = %v, want m1,m2", user, r.UnknownSupersedes)
		}
		for _, m := range r.Added {
			if m.User != user {
				t.Errorf("user %q: added %+v in another scope", user, m)
			}
		}
	}
	ms, err := st.List(ctx, memory.Query{User: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range ms {
		found = found || m.Content == "Answer in French."
	}
	if !found {
		t.Errorf("the workspace-wide rule is gone from another user's view: %+v", ms)
	}
}

// A memory a person typed is stored as typed (no full stop added), while
// extraction still ends what it stores with one; the two forms of the same
// fact are still found to be one (#31).
func TestExtractNormalisesAndMatchesTypedMemories(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	st := openStore(t)
	ctx := context.Background()
	if _, err := st.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: "  The user is   Alex ", User: "u1"}); err != nil {
		t.Fatal(err)
	}
	s.Push(reply(`{"user_instructions":null,"user_profile":[{"content":"The user is Alex","supersedes_id":null},{"content":"The user lives in  Porto","supersedes_id":null}]}`))
	ex := extract.New(extract.Options{Client: mustClient(t, s), Store: st})
	r, err := ex.Extract(ctx, extract.Job{Chat: "c1", User: "u1", Messages: conversation("I am Alex and I live in Porto.")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Duplicates != 1 || len(r.Added) != 1 {
		t.Errorf("duplicates %d, added %+v; want 1 and the Porto one", r.Duplicates, r.Added)
	}
	got := active(t, st)
	if len(got) != 2 || got[0].Content != "The user lives in Porto." || got[1].Content != "The user is Alex" {
		t.Errorf("active memories = %+v", got)
	}
}
