package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/server"
	"github.com/loomctx/loom/workspace"
)

// MountPattern is where [Mount] serves each workspace's MCP endpoint.
const MountPattern = "/v1/workspaces/{ws}/mcp"

// Mount attaches the streamable HTTP transport of every workspace s serves
// at /v1/workspaces/{ws}/mcp, behind the server's authentication and
// limits. Each workspace gets its own MCP server on first use; they are
// closed when s drains.
func Mount(s *server.Server) error {
	m := &mounted{servers: map[*workspace.Workspace]*mountEntry{}}
	s.HandleWorkspace(MountPattern, m.serve)
	s.AddDrainer(m.close)
	return nil
}

type mounted struct {
	mu      sync.Mutex
	servers map[*workspace.Workspace]*mountEntry
	closed  bool
}

type mountEntry struct {
	srv *Server
	h   http.Handler
}

func (m *mounted) serve(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	e, err := m.get(ws)
	if err != nil {
		server.WriteProblem(w, r, err)
		return
	}
	e.h.ServeHTTP(w, r)
}

func (m *mounted) get(ws *server.Workspace) (*mountEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, server.Errorf(http.StatusServiceUnavailable, server.CodeUnavailable, "shutting down")
	}
	if e := m.servers[ws.Door]; e != nil {
		return e, nil
	}
	// The server's store choice holds here too: with PostgreSQL, the
	// tools and the prompt use the workspace's shared store.
	shared, err := ws.SharedMemory(context.Background())
	if err != nil {
		return nil, err
	}
	srv, err := New(ws.Door, Options{Store: shared})
	if err != nil {
		return nil, err
	}
	// The server's middleware checks every route's Host (loopback, and
	// the names given with --allowed-hosts) and refuses cross-site writes;
	// the SDK's own localhost check would refuse an allowed name.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.mcp },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	e := &mountEntry{srv: srv, h: h}
	m.servers[ws.Door] = e
	return e, nil
}

func (m *mounted) close(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	var errs []error
	for _, e := range m.servers {
		errs = append(errs, e.srv.Close())
	}
	return errors.Join(errs...)
}
