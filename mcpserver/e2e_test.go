package mcpserver_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/mcpserver"
	"github.com/loomctx/loom/workspace"
)

// nodeModules returns the node_modules folder holding the official MCP
// TypeScript SDK, and the node binary.
func nodeModules(t *testing.T) (dir, node string) {
	t.Helper()
	dir = testenv.NodeModules(t, "@modelcontextprotocol/sdk")
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "no node on PATH")
	}
	return dir, node
}

// buildLoom builds the loom binary once per test process; TestMain removes
// it.
func buildLoom(t *testing.T) string {
	t.Helper()
	return testenv.LoomBinary(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveLoomBinary()
	os.Exit(code)
}

// e2eWorkspace is the workspace the TypeScript client expects.
func e2eWorkspace(t *testing.T) string {
	root := t.TempDir()
	writeFile(t, root, "AGENTS.md", "# Agents\n\nBe brief and exact.\n")
	writeFile(t, root, "skills/greet/SKILL.md", skillFile("greet", "Greet the user by name", "", "Say hello to the user by name."))
	return root
}

// runClient runs testdata/client.cjs and checks every step passed.
func runClient(t *testing.T, modules, node string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script, _ := filepath.Abs(filepath.Join("testdata", "client.cjs"))
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.CombinedOutput()
	t.Logf("TypeScript client:\n%s", out)
	if err != nil {
		t.Fatalf("TypeScript client failed: %v", err)
	}
	for _, step := range []string{"prompts/list", "resources/list", "tools/list", "prompts/get", "resources/read loom://prompt",
		"tools/call remember", "tools/call recall", "notifications/prompts/list_changed", "done"} {
		if !strings.Contains(string(out), step) {
			t.Errorf("the client's output lacks step %q", step)
		}
	}
}

func TestTypeScriptClientStdio(t *testing.T) {
	modules, node := nodeModules(t)
	bin := buildLoom(t)
	runClient(t, modules, node, "stdio", bin, e2eWorkspace(t))
}

// TestTypeScriptClientHTTP runs the same client over streamable HTTP against
// Server.Handler, as loom serve mounts it.
func TestTypeScriptClientHTTP(t *testing.T) {
	modules, node := nodeModules(t)
	root := e2eWorkspace(t)
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	s, err := mcpserver.New(ws, mcpserver.Options{Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	runClient(t, modules, node, "http", srv.URL, "", root)
}

// TestStreamableHTTP connects the Go SDK's client to Server.Handler.
func TestStreamableHTTP(t *testing.T) {
	root := e2eWorkspace(t)
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	s, err := mcpserver.New(ws, mcpserver.Options{Poll: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.PromptURI})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Contents[0].Text, "Be brief and exact.") {
		t.Errorf("loom://prompt over HTTP lacks AGENTS.md")
	}
}

// TestTypeScriptClientServe runs the client against `loom serve`'s
// /v1/workspaces/default/mcp, behind a bearer token, and checks that a
// request without the token is refused.
func TestTypeScriptClientServe(t *testing.T) {
	modules, node := nodeModules(t)
	bin := buildLoom(t)
	root := e2eWorkspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "-w", root, "--addr", "127.0.0.1:0", "--token-env", "LOOM_E2E_TOKEN")
	cmd.Env = append(os.Environ(), "LOOM_E2E_TOKEN=e2e-secret")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), "serving on "); ok {
				addr <- a
			}
		}
	}()
	var base string
	select {
	case base = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("loom serve did not start within 30s")
	}
	url := base + "/v1/workspaces/default/mcp"
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST %s without a token: status %d, want 401", url, resp.StatusCode)
	}
	runClient(t, modules, node, "http", url, "e2e-secret", root)
}
