package mcpserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/buildinfo"
	"github.com/loomctx/loom/mcpserver"
	"github.com/loomctx/loom/server"
)

// The mounted MCP endpoint is behind the server's one Host check: a
// rebinding name gets 421, a name given with --allowed-hosts is answered
// (the SDK's own localhost check, which would refuse it, is off there),
// and a write from another web origin is refused.
func TestMountedEndpointHostCheck(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, ws, "AGENTS.md", "# Agent\n\nBe brief.\n")
	t.Setenv("LOOM_MEMORY_DB", "")
	s, err := server.New(server.Options{Dir: ws, AllowedHosts: []string{"loom.internal"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpserver.Mount(s); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	send := func(host string, headers ...string) (int, string) {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/workspaces/default/mcp", strings.NewReader(initialize))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if st, body := send("evil.example"); st != http.StatusMisdirectedRequest {
		t.Errorf("rebinding Host: %d %s", st, body)
	}
	for _, host := range []string{"loom.internal", strings.TrimPrefix(ts.URL, "http://")} {
		// The version is loom's, the one `loom --version` and `loom mcp`
		// over stdio report.
		if st, body := send(host); st != 200 || !strings.Contains(body, `"serverInfo"`) || !strings.Contains(body, `"version":"`+buildinfo.Version+`"`) {
			t.Errorf("Host %s: %d %.200s", host, st, body)
		}
	}
	if st, body := send("loom.internal", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); st != 403 {
		t.Errorf("cross-site: %d %.200s", st, body)
	}
}
