package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/mcpserver"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

var fixedNow = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// writeFile writes a workspace file, making its folders.
func writeFile(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skillFile(name, desc, extra, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n" + extra + "---\n" + body + "\n"
}

// testWorkspace is a small assistant workspace with two usable skills, one
// unavailable skill, and a bootstrap file.
func testWorkspace(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, root, "AGENTS.md", "# Agents\n\nBe brief and exact.\n")
	writeFile(t, root, "SOUL.md", "You are calm.\n")
	writeFile(t, root, "skills/greet/SKILL.md", skillFile("greet", "Greet the user by name", "", "Say hello to the user by name, then ask how to help."))
	writeFile(t, root, "skills/long/SKILL.md", skillFile("long", "A very long skill", "", "START\n"+strings.Repeat("word ", 5000)+"\nEND"))
	writeFile(t, root, "skills/needs-tool/SKILL.md", skillFile("needs-tool", "Needs a missing program",
		"metadata: {\"nanobot\": {\"requires\": {\"bins\": [\"loom-test-no-such-binary\"]}}}\n", "Run the tool."))
	return root
}

type client struct {
	cs     *mcp.ClientSession
	events chan string
	seen   []string
}

// connect starts a server on root and connects a Go SDK client over
// in-memory transports. Notifications arrive on events as
// "prompts", "resources" or "updated <uri>".
func connect(t *testing.T, root string, opts mcpserver.Options) (*mcpserver.Server, *client) {
	t.Helper()
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if opts.Now.IsZero() {
		opts.Now = fixedNow
	}
	if opts.Poll == 0 {
		opts.Poll = -1
	}
	s, err := mcpserver.New(ws, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := &client{events: make(chan string, 100)}
	send := func(e string) {
		select {
		case c.events <- e:
		default:
		}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { send("prompts") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { send("resources") },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			send("updated " + r.Params.URI)
		},
	})
	c.cs, err = cl.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cs.Close() })
	return s, c
}

// waitFor waits for the event want, failing after two seconds. Events seen
// while waiting for another are kept for later calls.
func (c *client) waitFor(t *testing.T, want string) {
	t.Helper()
	for i, e := range c.seen {
		if e == want {
			c.seen = append(c.seen[:i], c.seen[i+1:]...)
			return
		}
	}
	deadline := time.After(2 * time.Second)
	for {
		select {
		case e := <-c.events:
			if e == want {
				return
			}
			c.seen = append(c.seen, e)
		case <-deadline:
			t.Fatalf("no %q notification within 2s (saw %v)", want, c.seen)
		}
	}
}

// reset forgets the events seen so far, so the next wait sees only new ones.
func (c *client) reset() {
	time.Sleep(50 * time.Millisecond) // debounced list notifications
	c.seen = nil
	for {
		select {
		case <-c.events:
		default:
			return
		}
	}
}

func promptText(t *testing.T, r *mcp.GetPromptResult) string {
	t.Helper()
	if len(r.Messages) != 1 {
		t.Fatalf("got %d messages, want 1", len(r.Messages))
	}
	tc, ok := r.Messages[0].Content.(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", r.Messages[0].Content)
	}
	return tc.Text
}

func TestPrompts(t *testing.T) {
	root := testWorkspace(t)
	_, c := connect(t, root, mcpserver.Options{})
	ctx := context.Background()
	list, err := c.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Prompt{}
	for _, p := range list.Prompts {
		byName[p.Name] = p
	}
	for _, name := range []string{"system", "greet", "long", "needs-tool"} {
		if byName[name] == nil {
			t.Fatalf("prompt %q missing from %v", name, list.Prompts)
		}
	}
	if g := byName["greet"]; g.Description != "Greet the user by name" || len(g.Arguments) != 1 || g.Arguments[0].Name != "message" || g.Arguments[0].Required {
		t.Errorf("greet prompt = %+v, want its description and one optional argument message", g)
	}
	if d := byName["needs-tool"].Description; !strings.Contains(d, "CLI: loom-test-no-such-binary") {
		t.Errorf("unavailable skill's description %q does not name what it needs", d)
	}

	// A skill expands as "/greet message" does in loom messages.
	r, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"message": "for Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	got := promptText(t, r)
	ws, _ := workspace.Open(root)
	set := skills.New(ws, skills.Options{}).Load()
	want, _ := set.Expand("/greet for Ada", 0)
	if got != want {
		t.Errorf("prompts/get greet =\n%s\nwant the messages expansion\n%s", got, want)
	}
	if !strings.Contains(got, "Say hello to the user by name") || !strings.HasSuffix(got, "/greet for Ada") {
		t.Errorf("expansion %q lacks the body or the typed text", got)
	}

	// The long body is cut in the middle and the cut is reported.
	r, err = c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "long"})
	if err != nil {
		t.Fatal(err)
	}
	got = promptText(t, r)
	if !strings.Contains(got, "START") || !strings.Contains(got, "END") || len(got) > skills.DefaultMaxExpand+1000 {
		t.Errorf("long skill: %d characters, want at most about %d with both ends kept", len(got), skills.DefaultMaxExpand)
	}
	if !strings.Contains(r.Description, "cut from the middle") || r.Meta["loom/cut"] == nil {
		t.Errorf("long skill: description %q / meta %v do not report the cut", r.Description, r.Meta)
	}

	// An unavailable skill is an error naming what it needs.
	_, err = c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "needs-tool"})
	if err == nil || !strings.Contains(err.Error(), "loom-test-no-such-binary") {
		t.Errorf("getting an unavailable skill: err = %v, want one naming the missing binary", err)
	}

	// The system prompt, with a budget.
	r, err = c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "system"})
	if err != nil {
		t.Fatal(err)
	}
	full := promptText(t, r)
	if !strings.Contains(full, "Be brief and exact.") {
		t.Errorf("system prompt lacks AGENTS.md:\n%s", full)
	}
	if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "system", Arguments: map[string]string{"budget": "-3"}}); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("budget -3: err = %v, want one naming budget", err)
	}
}

func readText(t *testing.T, c *client, uri string) string {
	t.Helper()
	r, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(r.Contents) != 1 {
		t.Fatalf("read %s: %d contents", uri, len(r.Contents))
	}
	return r.Contents[0].Text
}

func TestResources(t *testing.T) {
	root := testWorkspace(t)
	_, c := connect(t, root, mcpserver.Options{})
	ctx := context.Background()
	list, err := c.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	joined := strings.Join(uris, " ")
	for _, want := range []string{"loom://prompt", "loom://report", "loom://files/AGENTS.md", "loom://files/SOUL.md", "loom://skills/greet"} {
		if !strings.Contains(joined+" ", want+" ") {
			t.Errorf("resources %v lack %s", uris, want)
		}
	}
	if strings.Contains(joined, "USER.md") {
		t.Errorf("resources %v list USER.md, which does not exist", uris)
	}

	prompt := readText(t, c, "loom://prompt")
	if !strings.Contains(prompt, "Be brief and exact.") {
		t.Errorf("loom://prompt lacks AGENTS.md")
	}
	var rep struct {
		Tokens   int    `json:"tokens"`
		Encoding string `json:"encoding"`
		Sections []struct {
			Name string `json:"name"`
		} `json:"sections"`
	}
	if err := json.Unmarshal([]byte(readText(t, c, "loom://report")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Tokens == 0 || rep.Encoding == "" || len(rep.Sections) == 0 {
		t.Errorf("loom://report = %+v, want tokens, encoding and sections", rep)
	}
	if got := readText(t, c, "loom://skills/greet"); got != skillFile("greet", "Greet the user by name", "", "Say hello to the user by name, then ask how to help.") {
		t.Errorf("loom://skills/greet = %q, want the SKILL.md as written", got)
	}
	if got := readText(t, c, "loom://files/AGENTS.md"); got != "# Agents\n\nBe brief and exact.\n" {
		t.Errorf("loom://files/AGENTS.md = %q", got)
	}
}

func TestPathSafety(t *testing.T) {
	root := testWorkspace(t)
	outside := t.TempDir()
	writeFile(t, outside, "secret/SKILL.md", skillFile("secret", "outside", "", "TOP SECRET"))
	writeFile(t, outside, "notes.md", "TOP SECRET")
	if err := os.MkdirAll(filepath.Join(root, "skills", "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret", "SKILL.md"), filepath.Join(root, "skills", "linked", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "notes.md"), filepath.Join(root, "USER.md")); err != nil {
		t.Fatal(err)
	}
	_, c := connect(t, root, mcpserver.Options{})
	ctx := context.Background()
	for _, uri := range []string{
		"loom://skills/../../etc/passwd",
		"loom://skills/..%2F..%2Fetc%2Fpasswd",
		"loom://skills/%2e%2e",
		"loom://skills/linked",
		"loom://skills/",
		"loom://files/../../etc/passwd",
		"loom://files/loom.yaml",
		"loom://files/USER.md",
		"loom://files/%2Fetc%2Fpasswd",
		"file:///etc/passwd",
	} {
		r, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err == nil {
			t.Errorf("read %s: served %q, want an error", uri, r.Contents[0].Text)
			continue
		}
		if strings.Contains(err.Error(), outside) {
			t.Errorf("read %s: error %q names a path outside the workspace", uri, err)
		}
	}
	if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "linked"}); err == nil {
		t.Errorf("prompts/get linked: served a skill whose file is a symlink out")
	}
	if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "../../etc/passwd"}); err == nil {
		t.Errorf("prompts/get ../../etc/passwd: no error")
	}
	if p := readText(t, c, "loom://prompt"); strings.Contains(p, "TOP SECRET") {
		t.Errorf("the rendered prompt holds a file from outside the workspace")
	}
}

// callTool calls a tool and decodes its structured output into out. It
// returns the tool error text, or "".
func callTool(t *testing.T, c *client, name string, args any, out any) string {
	t.Helper()
	r, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if r.IsError {
		return r.Content[0].(*mcp.TextContent).Text
	}
	if out != nil {
		data, _ := json.Marshal(r.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("call %s: %v in %s", name, err, data)
		}
	}
	return ""
}

func TestMemoryTools(t *testing.T) {
	root := testWorkspace(t)
	_, c := connect(t, root, mcpserver.Options{})
	var rem struct {
		Memory struct {
			ID, Category, Content, User string
		} `json:"memory"`
	}
	if e := callTool(t, c, "remember", map[string]any{"content": "The user prefers green tea.", "category": "personal_fact"}, &rem); e != "" {
		t.Fatal(e)
	}
	if rem.Memory.ID == "" || rem.Memory.Content != "The user prefers green tea." {
		t.Fatalf("remember returned %+v", rem)
	}
	if e := callTool(t, c, "remember", map[string]any{"content": "Answer in French.", "user": "ada"}, nil); e != "" {
		t.Fatal(e)
	}
	type recallOut struct {
		Memories []struct{ ID, Content, User string } `json:"memories"`
		Matched  int                                  `json:"matched"`
	}
	var rc recallOut
	if e := callTool(t, c, "recall", map[string]any{"text": "GREEN"}, &rc); e != "" {
		t.Fatal(e)
	}
	if rc.Matched != 1 || rc.Memories[0].ID != rem.Memory.ID {
		t.Errorf("recall text=GREEN = %+v, want the tea memory", rc)
	}
	rc = recallOut{}
	callTool(t, c, "recall", map[string]any{}, &rc)
	if rc.Matched != 2 {
		t.Errorf("recall of every scope found %d memories, want 2", rc.Matched)
	}
	// The remembered fact enters the prompt (workspace scope).
	if p := readText(t, c, "loom://prompt"); !strings.Contains(p, "The user prefers green tea.") {
		t.Errorf("loom://prompt lacks the remembered memory")
	}
	var fg struct{ Forgotten string }
	if e := callTool(t, c, "forget", map[string]any{"id": rem.Memory.ID}, &fg); e != "" || fg.Forgotten != rem.Memory.ID {
		t.Fatalf("forget: %q %+v", e, fg)
	}
	if p := readText(t, c, "loom://prompt"); strings.Contains(p, "The user prefers green tea.") {
		t.Errorf("loom://prompt still holds the forgotten memory")
	}

	// Bad arguments are tool errors naming the field.
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"remember", map[string]any{"content": ""}, "content"},
		{"remember", map[string]any{"content": 7}, "content"},
		{"remember", map[string]any{"content": "x", "category": "nope"}, "category"},
		{"remember", map[string]any{"content": "x", "supersedes": "no-such-id"}, "supersedes"},
		{"remember", map[string]any{"content": strings.Repeat("x", 70_000)}, "content"},
		{"recall", map[string]any{"limit": -1}, "limit"},
		{"recall", map[string]any{"category": "nope"}, "category"},
		{"forget", map[string]any{"id": "no-such-id"}, "id"},
		{"forget", map[string]any{}, "id"},
		{"render_prompt", map[string]any{"budget": -5}, "budget"},
		{"render_prompt", map[string]any{"preset": "pirate"}, "preset"},
		{"render_prompt", map[string]any{"now": "yesterday"}, "now"},
		{"render_prompt", map[string]any{"encoding": "rot13"}, "encoding"},
		{"count_tokens", map[string]any{"text": "x", "encoding": "rot13"}, "encoding"},
		{"count_tokens", map[string]any{"text": []int{1}}, "text"},
	} {
		e := callTool(t, c, tc.tool, tc.args, nil)
		if e == "" || !strings.Contains(e, tc.field) {
			t.Errorf("%s %v: error %q, want one naming %s", tc.tool, tc.args, e, tc.field)
		}
	}
}

func TestUserScope(t *testing.T) {
	root := testWorkspace(t)
	_, c := connect(t, root, mcpserver.Options{User: "ada"})
	var rem struct{ Memory struct{ ID, User string } }
	if e := callTool(t, c, "remember", map[string]any{"content": "Ada likes short answers."}, &rem); e != "" || rem.Memory.User != "ada" {
		t.Fatalf("remember in ada's server: %q %+v", e, rem)
	}
	if e := callTool(t, c, "remember", map[string]any{"content": "x", "user": "bob"}, nil); !strings.Contains(e, "user") {
		t.Errorf("remember for bob on ada's server: %q, want an error naming user", e)
	}
	if e := callTool(t, c, "recall", map[string]any{"user": "bob"}, nil); !strings.Contains(e, "user") {
		t.Errorf("recall for bob on ada's server: %q, want an error naming user", e)
	}
}

func TestRenderAndCount(t *testing.T) {
	root := testWorkspace(t)
	_, c := connect(t, root, mcpserver.Options{})
	var res struct {
		Prompt string `json:"prompt"`
		Report struct {
			Tokens   int    `json:"tokens"`
			Budget   *int   `json:"budget"`
			Encoding string `json:"encoding"`
		} `json:"report"`
	}
	if e := callTool(t, c, "render_prompt", map[string]any{"encoding": "cl100k_base", "budget": 100000, "channel": "slack"}, &res); e != "" {
		t.Fatal(e)
	}
	if res.Report.Encoding != "cl100k_base" || res.Report.Budget == nil || *res.Report.Budget != 100000 || !strings.Contains(res.Prompt, "Be brief and exact.") {
		t.Errorf("render_prompt = %+v", res.Report)
	}
	var n struct {
		Tokens   int
		Encoding string
	}
	if e := callTool(t, c, "count_tokens", map[string]any{"text": "hello world", "encoding": "o200k_base"}, &n); e != "" {
		t.Fatal(e)
	}
	if n.Tokens != 2 || n.Encoding != "o200k_base" {
		t.Errorf("count_tokens(hello world) = %+v, want 2 o200k_base tokens", n)
	}
}

func TestChangeNotifications(t *testing.T) {
	root := testWorkspace(t)
	_, c := connect(t, root, mcpserver.Options{Poll: time.Hour, Debounce: 20 * time.Millisecond}) // the change feed alone
	ctx := context.Background()
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "loom://prompt"}); err != nil {
		t.Fatal(err)
	}
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "loom://skills/greet"}); err != nil {
		t.Fatal(err)
	}

	// Editing a skill: its prompt changed, and its resource was updated.
	writeFile(t, root, "skills/greet/SKILL.md", skillFile("greet", "Greet the user warmly", "", "Say a warm hello."))
	c.waitFor(t, "prompts")
	c.waitFor(t, "updated loom://skills/greet")
	r, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(promptText(t, r), "Say a warm hello.") {
		t.Errorf("after the edit, greet = %q", promptText(t, r))
	}

	// A new skill is a new prompt and a new resource.
	c.reset()
	writeFile(t, root, "skills/fresh/SKILL.md", skillFile("fresh", "A new skill", "", "New."))
	c.waitFor(t, "resources")
	list, err := c.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range list.Prompts {
		found = found || p.Name == "fresh"
	}
	if !found {
		t.Errorf("prompt fresh not listed after it was created")
	}

	// Editing a bootstrap file updates loom://prompt for its subscribers.
	c.reset()
	writeFile(t, root, "AGENTS.md", "# Agents\n\nBe thorough.\n")
	c.waitFor(t, "updated loom://prompt")
	if p := readText(t, c, "loom://prompt"); !strings.Contains(p, "Be thorough.") {
		t.Errorf("loom://prompt after the edit lacks the new text")
	}

	// A file that appears is a new resource; one that goes is removed.
	c.reset()
	writeFile(t, root, "RULES.md", "Never guess.\n")
	c.waitFor(t, "resources")
	if got := readText(t, c, "loom://files/RULES.md"); got != "Never guess.\n" {
		t.Errorf("loom://files/RULES.md = %q", got)
	}
	c.reset()
	if err := os.Remove(filepath.Join(root, "RULES.md")); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "resources")
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loom://files/RULES.md"}); err == nil {
		t.Errorf("loom://files/RULES.md still served after it was removed")
	}
}

// A render with diagnostics is still a valid render_prompt answer: the
// output schema must describe a diagnostic's severity as the string it is
// encoded as ("warning"/"error"), or the SDK refuses the tool's own result.
func TestRenderWithDiagnostics(t *testing.T) {
	root := testWorkspace(t)
	writeFile(t, root, "skills/broken/SKILL.md", "---\nname: [unclosed\n---\nbody\n")
	_, c := connect(t, root, mcpserver.Options{})
	var res struct {
		Report struct {
			Diagnostics []struct {
				Path     string `json:"path"`
				Severity string `json:"severity"`
			} `json:"diagnostics"`
		} `json:"report"`
	}
	if e := callTool(t, c, "render_prompt", map[string]any{}, &res); e != "" {
		t.Fatalf("render_prompt with a broken skill: %s", e)
	}
	found := false
	for _, d := range res.Report.Diagnostics {
		if strings.HasPrefix(d.Path, "skills/broken/") {
			found = true
			if d.Severity != "warning" && d.Severity != "error" {
				t.Errorf("severity %q, want warning or error", d.Severity)
			}
		}
	}
	if !found {
		t.Errorf("no diagnostic for skills/broken/SKILL.md in %+v", res.Report.Diagnostics)
	}
}

// staleNotify is a shared store whose change notifications lag (Version
// stays put) while its write counter (FreshVersion) moves with every
// write, as another replica's write looks before its NOTIFY arrives.
type staleNotify struct {
	memory.Store
	writes atomic.Uint64
}

func (s *staleNotify) Version() (uint64, bool) { return 1, true }
func (s *staleNotify) FreshVersion(context.Context, string) (uint64, error) {
	return s.writes.Load(), nil
}

// recall on a shared store reads the store's write counter, not only its
// notifications, so a write made elsewhere is in the very next answer.
func TestRecallSeesOtherReplicasWrites(t *testing.T) {
	root := testWorkspace(t)
	inner, err := memory.OpenSQLite(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	st := &staleNotify{Store: inner}
	_, c := connect(t, root, mcpserver.Options{Store: st})
	var rc struct {
		Matched int `json:"matched"`
	}
	if e := callTool(t, c, "recall", map[string]any{"user": "ada"}, &rc); e != "" || rc.Matched != 0 {
		t.Fatalf("recall on an empty store: %d, %s", rc.Matched, e)
	}
	// Another replica writes: straight into the store, not through this server.
	if _, err := inner.Add(context.Background(), memory.NewMemory{Category: memory.DefaultCategories[0].Name, Content: "Ada works in Oslo", User: "ada"}); err != nil {
		t.Fatal(err)
	}
	st.writes.Add(1)
	if e := callTool(t, c, "recall", map[string]any{"user": "ada"}, &rc); e != "" || rc.Matched != 1 {
		t.Errorf("recall right after another replica's write found %d memories (%s), want 1", rc.Matched, e)
	}
}
