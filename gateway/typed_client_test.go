package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomctx/loom/gateway"
	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/server"
)

// TestTypedClient generates a TypeScript client from loom's OpenAPI
// document (openapi-typescript), compiles a program calling loom's API,
// the gateway's Responses and Messages routes and the model list through it
// (openapi-fetch) under tsc --strict, runs it, and has it validate every
// answer against the document with ajv.
func TestTypedClient(t *testing.T) {
	nm := testenv.NodeModules(t, "openapi-typescript", "openapi-fetch", "typescript", "ajv", "@types/node")
	t.Setenv("LOOM_ALLOWED_ENDPOINTS", "127.0.0.1")
	up := newUpstream(t)
	up.setReply(openaiModel)
	dir := writeWorkspace(t, up.URL, "")
	s, err := server.New(server.Options{Dir: dir, Tokens: []string{"typed-token"}})
	if err != nil {
		t.Fatal(err)
	}
	gateway.Mount(s, gateway.Options{Now: func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	t.Setenv("LOOM_TEST_UPSTREAM_KEY", "sk-upstream-secret")

	tmp := t.TempDir()
	if err := os.Symlink(nm, filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"client.ts", "tsconfig.json", "package.json"} {
		src, err := os.ReadFile(filepath.Join("testdata", "typed_client", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(tmp, f), src, 0o644)
	}
	doc := filepath.Join(tmp, "openapi.json")
	os.WriteFile(doc, server.OpenAPI(), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(name string, args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "LOOM_BASE_URL="+ts.URL, "LOOM_OPENAPI="+doc)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return out
	}
	run("node", filepath.Join(nm, "openapi-typescript", "bin", "cli.js"), "openapi.json", "-o", "schema.d.ts")
	run("node", filepath.Join(nm, "typescript", "bin", "tsc"), "-p", ".")
	out := run("node", filepath.Join("out", "client.js"))
	var got struct {
		Checked []string `json:"checked"`
		Texts   []string `json:"texts"`
		Said    string   `json:"said"`
		Block   string   `json:"block"`
		Count   int      `json:"count"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	want := []string{"render 200", "messages 200", "tokens 200", "skills 200", "render unknown workspace 404", "responses 200",
		"responses bad input 400", "anthropic messages 200", "count_tokens 200", "models 200", "models (anthropic) 200"}
	if len(got.Checked) != len(want) {
		t.Errorf("checked %q, want %q", got.Checked, want)
	}
	for i := range want {
		if i < len(got.Checked) && got.Checked[i] != want[i] {
			t.Errorf("check %d: %q, want %q", i, got.Checked[i], want[i])
		}
	}
	if got.Said != "plain answer" || got.Block != "plain answer" || got.Count <= 0 || len(got.Texts) < 4 || got.Texts[1] != "earlier" {
		t.Errorf("client saw %s", out)
	}
}
