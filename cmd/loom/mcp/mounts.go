package mcp

import (
	"github.com/loomctx/loom/cmd/loom/serve"
	"github.com/loomctx/loom/inspector"
	"github.com/loomctx/loom/mcpserver"
)

// loom serve mounts the front ends this package's owner builds: every
// workspace's MCP endpoint at /v1/workspaces/{ws}/mcp, and the inspector at
// /inspect/{ws}/.
func init() { serve.Mounts = append(serve.Mounts, mcpserver.Mount, inspector.Mount) }
