package mcpserver_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/mcpserver"
	"github.com/loomctx/loom/workspace"
)

// needComponent skips the test, or fails it under LOOM_REQUIRE_ALL=1, when
// an outside component is missing.
// TODO: switch to internal/testenv once it lands.
func needComponent(t *testing.T, component, why string) {
	t.Helper()
	if os.Getenv("LOOM_REQUIRE_ALL") == "1" {
		t.Fatalf("NEEDS %s: %s", component, why)
	}
	t.Skipf("NEEDS %s: %s", component, why)
}

// nodeModules returns the node_modules folder holding the official MCP
// TypeScript SDK, and the node binary.
func nodeModules(t *testing.T) (dir, node string) {
	t.Helper()
	dir = os.Getenv("LOOM_TEST_NODE_MODULES")
	if dir == "" {
		needComponent(t, "node_modules", "set LOOM_TEST_NODE_MODULES to a node_modules folder holding @modelcontextprotocol/sdk")
	}
	if _, err := os.Stat(filepath.Join(dir, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		needComponent(t, "node_modules", "LOOM_TEST_NODE_MODULES="+dir+" has no @modelcontextprotocol/sdk (npm install @modelcontextprotocol/sdk)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needComponent(t, "node", "no node on PATH")
	}
	return dir, node
}

// buildLoom builds the loom binary into a temporary folder.
func buildLoom(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "loom")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/loomctx/loom/cmd/loom")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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
