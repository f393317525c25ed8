package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/inspector"
	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/mcpserver"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/server"
)

// pgReplica is one server on the shared database, as one replica.
func pgReplica(t *testing.T, dir, dsn string) *client {
	t.Helper()
	_, c := newServer(t, server.Options{Dir: dir, Store: server.StorePostgres,
		Getenv: func(k string) string {
			if k == "LOOM_PG_DSN" {
				return dsn
			}
			return ""
		}})
	return c
}

// uniqueWorkspace keeps this test's rows apart from other tests' in the
// shared database.
func uniqueWorkspace(t *testing.T) {
	var b [6]byte
	rand.Read(b[:])
	t.Setenv("LOOM_PG_WORKSPACE", t.Name()+"/"+hex.EncodeToString(b[:]))
}

// Two replicas on one PostgreSQL share memories, sessions and prompts:
// what one writes, the other's next render and session read hold, and
// nothing lands in the workspace folder.
func TestPGReplicasShareState(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	uniqueWorkspace(t)
	dir, _ := modelWorkspace(t, "Noted.", "unused")
	a, b := pgReplica(t, dir, dsn), pgReplica(t, dir, dsn)

	renderHas := func(c *client, text string) bool {
		r := c.do("POST", "/v1/workspaces/default/render", map[string]any{"user": "ann"})
		if r.Status != 200 {
			t.Fatalf("render: %d %s", r.Status, r.Body)
		}
		var out server.RenderResponse
		r.decode(t, &out)
		return strings.Contains(out.Prompt, text)
	}
	// Both render first, so each has a cached prompt that must be dropped.
	if renderHas(a, "oolong") || renderHas(b, "oolong") {
		t.Fatal("memory in the prompt before it was written")
	}
	r := a.do("POST", "/v1/workspaces/default/memories", map[string]any{"category": "personal_fact", "content": "Ann drinks oolong.", "user": "ann"})
	if r.Status != 201 {
		t.Fatalf("add: %d %s", r.Status, r.Body)
	}
	var added server.MemoryList
	r.decode(t, &added)
	if !renderHas(a, "oolong") {
		t.Fatal("the writing replica's next render lacks the memory")
	}
	// The other replica's very next render holds it: the render reads
	// the database's change counter, so it does not wait for the NOTIFY.
	if !renderHas(b, "oolong") {
		t.Fatal("replica b's next render after the write lacks the memory")
	}
	if r := b.do("DELETE", "/v1/workspaces/default/memories/"+added.Memories[0].ID, nil); r.Status != 204 {
		t.Fatalf("forget on b: %d %s", r.Status, r.Body)
	}
	if renderHas(b, "oolong") {
		t.Fatal("the forgetting replica's next render still holds the memory")
	}
	if renderHas(a, "oolong") {
		t.Fatal("replica a's next render after the forget still holds the memory")
	}

	// Turns on one session alternate between replicas; both read it whole.
	for i, c := range []*client{a, b, a, b} {
		r := c.do("POST", "/v1/workspaces/default/sessions/shared-1/turns", map[string]any{"message": "turn " + string(rune('A'+i)), "user": "ann"})
		if r.Status != 200 {
			t.Fatalf("turn %d: %d %s", i, r.Status, r.Body)
		}
	}
	for _, c := range []*client{a, b} {
		var hist server.SessionMessages
		c.do("GET", "/v1/workspaces/default/sessions/shared-1/messages", nil).decode(t, &hist)
		if len(hist.Messages) != 8 {
			t.Fatalf("session holds %d messages, want 8", len(hist.Messages))
		}
		for i := 0; i < 4; i++ {
			if got := hist.Messages[2*i].Content.String(); got != "turn "+string(rune('A'+i)) {
				t.Fatalf("message %d is %q", 2*i, got)
			}
			if got := hist.Messages[2*i+1].Content.String(); got != "Noted." {
				t.Fatalf("message %d is %q", 2*i+1, got)
			}
		}
	}
	// messages with a session id reads the same session.
	r = b.do("POST", "/v1/workspaces/default/messages", map[string]any{"message": "next", "session_id": "shared-1", "format": "json"})
	if r.Status != 200 || !strings.Contains(string(r.Body), "turn D") {
		t.Fatalf("messages from the shared session: %d %.300s", r.Status, r.Body)
	}
	for _, p := range []string{".loom/memory.db", ".loom/sessions"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was written beside a PostgreSQL store", p)
		}
	}
}

// A PostgreSQL that cannot be reached gives a 503 problem with a stable
// code and Retry-After, never the DSN; a workspace that asks for
// PostgreSQL without a DSN gets a 503 naming the variable.
func TestPGUnavailableIs503(t *testing.T) {
	dir := writeWorkspace(t, t.TempDir())
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte("memory:\n  store: postgres\n  dsn_env: LOOM_TEAM_DSN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-pass"
	dsn := "postgres://loom:" + secret + "@127.0.0.1:1/loom?connect_timeout=2"
	_, c := newServer(t, server.Options{Dir: dir, Getenv: func(k string) string {
		if k == "LOOM_TEAM_DSN" {
			return dsn
		}
		return ""
	}})
	for _, q := range []struct{ method, path string }{
		{"GET", "/v1/workspaces/default/memories"},
		{"POST", "/v1/workspaces/default/render"},
		{"GET", "/v1/workspaces/default/sessions/s1/messages"},
	} {
		r := c.do(q.method, q.path, nil)
		p := r.problem(t)
		if r.Status != 503 || p.Code != server.CodeStoreUnavailable || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: %d %s (Retry-After %q)", q.method, q.path, r.Status, r.Body, r.Header.Get("Retry-After"))
		}
		if strings.Contains(string(r.Body), secret) {
			t.Errorf("%s %s: the DSN's password is in the response", q.method, q.path)
		}
	}

	dir2 := writeWorkspace(t, t.TempDir())
	os.WriteFile(filepath.Join(dir2, "loom.yaml"), []byte("memory:\n  store: postgres\n"), 0o644)
	_, c2 := newServer(t, server.Options{Dir: dir2, Getenv: func(string) string { return "" }})
	r := c2.do("GET", "/v1/workspaces/default/memories", nil)
	if p := r.problem(t); r.Status != 503 || p.Code != "store_not_configured" || !strings.Contains(p.Detail, "LOOM_PG_DSN") {
		t.Errorf("no DSN: %d %s", r.Status, r.Body)
	}
}

// The operator's --store postgres connects at start: an unreachable
// database stops the server from starting, without showing the DSN.
func TestPGStoreFlagConnectsAtStart(t *testing.T) {
	dir := writeWorkspace(t, t.TempDir())
	_, err := server.New(server.Options{Dir: dir, Store: server.StorePostgres, Getenv: func(string) string {
		return "postgres://loom:s3cret-pass@127.0.0.1:1/loom?connect_timeout=2"
	}})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("got %v", err)
	}
	if _, err := server.New(server.Options{Dir: dir, Store: "mysql"}); err == nil {
		t.Fatal("store mysql accepted")
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The front ends mounted on loom serve (MCP, the inspector) follow the
// server's store choice: what they write with PostgreSQL is what another
// replica reads, their prompts hold what another replica wrote, and no
// memory.db appears in the folder.
func TestPGMountedFrontEndsUseTheSharedStore(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	uniqueWorkspace(t)
	t.Setenv("LOOM_MEMORY_DB", "")
	dir := writeWorkspace(t, t.TempDir())
	getenv := func(k string) string {
		if k == "LOOM_PG_DSN" {
			return dsn
		}
		return ""
	}
	s, err := server.New(server.Options{Dir: dir, Store: server.StorePostgres, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpserver.Mount(s); err != nil {
		t.Fatal(err)
	}
	if err := inspector.Mount(s); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	b := pgReplica(t, dir, dsn)

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/v1/workspaces/default/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "remember", Arguments: map[string]any{"content": "Ann plays the cello.", "user": "ann"}}); err != nil {
		t.Fatal(err)
	}
	// The inspector's page sends its form token with the form (a page of
	// another site cannot read it).
	form := url.Values{"content": {"Ann lives in Porto."}, "user": {"ann"}}.Encode()
	req, err := http.NewRequest("POST", ts.URL+"/inspect/default/memories", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(server.FormTokenHeader, s.FormToken())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("inspector add: %d", res.StatusCode)
	}
	var list server.MemoryList
	b.do("GET", "/v1/workspaces/default/memories?user=ann", nil).decode(t, &list)
	var got []string
	for _, m := range list.Memories {
		got = append(got, m.Content)
	}
	if !slices.Contains(got, "Ann plays the cello.") || !slices.Contains(got, "Ann lives in Porto.") {
		t.Fatalf("replica b lists %q", got)
	}

	// A workspace-wide memory written on b reaches MCP's prompt on a.
	b.do("POST", "/v1/workspaces/default/memories", map[string]any{"category": "personal_fact", "content": "The team keeps bees."})
	waitFor(t, "MCP's prompt on a to hold b's memory", func() bool {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.PromptURI})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(r.Contents[0].Text, "The team keeps bees.")
	})
	if _, err := os.Stat(filepath.Join(dir, ".loom", "memory.db")); err == nil {
		t.Error("a front end made memory.db beside the PostgreSQL store")
	}
}

// A consolidation on one replica (turns past the threshold) stores the
// user's MEMORY.md with the moved pointer in PostgreSQL, and another
// replica's next render for that user shows it; the folder holds no
// memory files.
func TestPGConsolidationReachesOtherReplicas(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	uniqueWorkspace(t)
	fake := llmtest.New(t, llmtest.OpenAI)
	fake.Default = func(r llmtest.Request) llmtest.Reply {
		switch r.Kind {
		case "consolidate":
			return llmtest.Reply{ToolCalls: []messages.ToolCall{messages.NewToolCall("c1", "save_memory",
				`{"history_entry":"[2026-03-01 10:00] Ann talked about tea.","memory_update":"# Memory\n- Ann brews oolong at 85 degrees.\n"}`)}}
		case "extract":
			return llmtest.Reply{Text: `{"user_instructions": [], "user_profile": []}`}
		}
		return llmtest.Reply{Text: strings.Repeat("A long enough answer about tea. ", 8)}
	}
	dir := writeWorkspace(t, t.TempDir())
	yaml := "llm:\n  provider: openai\n  base_url: " + fake.URL + "/v1\n  model: gpt-4o-mini\n  consolidation:\n    enabled: true\n    threshold_tokens: 200\n"
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"LOOM_LLM_BASE_URL", "LOOM_LLM_API_KEY", "LOOM_LLM_MODEL", "LOOM_LLM_PROVIDER"} {
		t.Setenv(k, "")
	}
	a, b := pgReplica(t, dir, dsn), pgReplica(t, dir, dsn)
	renderHas := func(c *client) bool {
		var out server.RenderResponse
		c.do("POST", "/v1/workspaces/default/render", map[string]any{"user": "ann"}).decode(t, &out)
		return strings.Contains(out.Prompt, "Ann brews oolong at 85 degrees.")
	}
	if renderHas(b) {
		t.Fatal("MEMORY.md in the prompt before any consolidation")
	}
	for i := range 6 {
		if r := a.do("POST", "/v1/workspaces/default/sessions/tea/turns", map[string]any{"message": fmt.Sprintf("Tell me about tea, part %d.", i), "user": "ann"}); r.Status != 200 {
			t.Fatalf("turn %d: %d %s", i, r.Status, r.Body)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !renderHas(b) {
		if time.Now().After(deadline) {
			t.Fatal("replica b's prompt never showed the MEMORY.md replica a's consolidation stored")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var hist server.SessionMessages
	b.do("GET", "/v1/workspaces/default/sessions/tea/messages", nil).decode(t, &hist)
	if hist.LastConsolidated == 0 || len(hist.Messages) != 12 {
		t.Errorf("session: pointer %d, %d messages", hist.LastConsolidated, len(hist.Messages))
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "memory", "MEMORY.md")); string(data) != "The user's cat is called Miso.\n" {
		t.Errorf("the folder's MEMORY.md changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory", "HISTORY.md")); err == nil {
		t.Error("HISTORY.md written to the folder with the PostgreSQL store")
	}
	// Ann's prompt shows her MEMORY.md from the database in place of the
	// folder's.
	var out server.RenderResponse
	b.do("POST", "/v1/workspaces/default/render", map[string]any{"user": "ann"}).decode(t, &out)
	if strings.Contains(out.Prompt, "Miso") {
		t.Error("the folder's MEMORY.md is still in ann's prompt beside the database's")
	}
}
