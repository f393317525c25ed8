package mcpserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/internal/alloctest"
	"github.com/loomctx/loom/mcpserver"
	"github.com/loomctx/loom/server"
)

// mountedSession starts a server with MCP mounted and opens a session on
// it, handing requests to its handler in process (no network: what is
// measured is the server's own work).
func mountedSession(t *testing.T) (post func(body string) *httptest.ResponseRecorder) {
	t.Helper()
	ws := t.TempDir()
	writeFile(t, ws, "AGENTS.md", "# Agent\n\nBe brief.\n")
	t.Setenv("LOOM_MEMORY_DB", "")
	s, err := server.New(server.Options{Dir: ws})
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpserver.Mount(s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := s.Handler()
	session := ""
	post = func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/workspaces/default/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if rec.Code != 200 {
		t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	session = rec.Header().Get("Mcp-Session-Id")
	if rec := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); rec.Code/100 != 2 {
		t.Fatalf("initialized: %d %s", rec.Code, rec.Body)
	}
	return post
}

// mcpRouteLimit bounds what a tools/call on the mounted HTTP route
// allocates, as a multiple of its body. It is over the 4 that loom's other
// routes keep because of the MCP SDK (v1.8.0) itself: its transport reads
// the body with io.ReadAll (2.4 times it, growing) and then decodes the
// message, or parts of it, five times (as a batch, as a message, its _meta
// twice, its params) with a decoder that first copies what it decodes into
// a buffer grown by doubling: 14.4 times the body before loom's handler
// runs. Loom's own decoding of the arguments adds 1 time
// (TestDecodeArgumentsPeakMemory); it added 9 through the SDK's typed
// handler (23.4 in all).
const mcpRouteLimit = 16

// A tools/call on the mounted HTTP route, with an argument as long as the
// route takes (the SDK's 4 MiB body cap), allocates at most mcpRouteLimit
// times its body.
func TestMountedToolCallPeakMemory(t *testing.T) {
	post := mountedSession(t)
	long := strings.Repeat("x", mcp.DefaultMaxRequestBodyBytes-200)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"content":%q}}}`, long)
	var rec *httptest.ResponseRecorder
	alloctest.Bound(t, "remember, 4 MiB content (refused)", len(body), mcpRouteLimit, func() { rec = post(body) })
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "argument content: is 4194104 bytes; the limit is") {
		t.Errorf("%d %.300s", rec.Code, rec.Body)
	}
}
