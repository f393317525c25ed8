// Package server is loom's HTTP front end: a long-running process that keeps
// every workspace it serves watched and every render cached, so an agent in
// any language gets its prompt, message list and turns over plain HTTP.
//
// The server is a transport and nothing more. Every route makes one library
// call — prompt.Builder.Render, messages.Build, session.Turn, a memory.Store
// method — and encodes the same result struct the CLI prints with --json.
// Routes are data: Go 1.22 patterns on an http.ServeMux, handlers that return
// (value, error), and one adapter that encodes the value as JSON or the
// error as an RFC 9457 problem (application/problem+json) with a stable
// code. The API is described by the OpenAPI 3.1 document embedded from
// openapi.json and served at GET /v1/openapi.json.
//
// # Workspaces
//
// [Options.Dir] serves one folder as the workspace named "default";
// [Options.Root] serves every plain sub-folder of a folder under its own
// name. A name that is not a plain folder name under the root (a dot, a
// slash, a symbolic link, a file) is 404 and never becomes a path. A
// [Workspace] is opened on first use, watched from then on, and shared by
// every request.
//
// # Mounting other front ends
//
// Other front ends (the gateway, MCP, the inspector) attach to the same
// server, so they share its listener, its authentication, its size caps,
// its logs, its metrics and its drain on shutdown:
//
//	s, err := server.New(server.Options{Dir: dir})
//	s.Handle("GET /inspect/", inspectorHandler)                    // any route
//	s.HandleWorkspace("POST /v1/workspaces/{ws}/mcp", mcpHandler)    // {ws} resolved for you
//	s.AddDrainer(func(ctx context.Context) error { return q.Drain(ctx) })
//	err = s.ListenAndServe(ctx, "127.0.0.1:7411")
//
// [Server.Handle] registers a plain http.Handler under a ServeMux pattern.
// [Server.HandleWorkspace] registers a handler whose pattern holds a {ws}
// wildcard: the server resolves it to an open [*Workspace] (or answers 404
// itself) before calling the handler. Patterns are matched as
// http.ServeMux matches them; registering a pattern twice panics, as
// ServeMux does. Register everything before serving.
//
// Every handler, mounted or built in, runs behind the same middleware, in
// this order: a request id (X-Request-Id, echoed back), the request log
// line (log/slog; never a header's value), panic recovery (a 500 problem,
// the panic logged), metrics (requests by route pattern and status, latency
// histograms), bearer-token authentication (every route but GET /healthz;
// tokens compared in constant time) and the request body cap
// ([Options.MaxBodyBytes]; a mounted handler reading past it gets an
// *http.MaxBytesError, which [DecodeJSON] turns into a 413 problem).
//
// [Server.AddDrainer] registers a function that runs when the server shuts
// down, after the listener has stopped taking requests and in-flight ones
// have finished, with a context bounded by [Options.DrainTimeout]. Drainers
// run in the order they were added.
//
// A mounted front end that runs turns or needs the model uses the
// workspace's shared [Engine] ([Workspace.Engine]): the configured model
// client, the extraction worker (drained at shutdown), the memory store and
// the open sessions. [Workspace.Skills] gives the skill set, reused while no
// file changed. Package gateway is mounted this way by `loom serve`.
//
// Helpers for mounted handlers: [WriteJSON] encodes a value the way every
// route does, [WriteProblem] writes a problem response, [DecodeJSON] decodes
// a bounded request body and names the offending field on error, and
// [Server.Registry] is the Prometheus registry served at GET /metrics, for a
// front end's own metrics.
//
// # Security
//
// [Server.ListenAndServe] refuses a non-loopback address unless
// [Options.Tokens] is set. The server sets read-header, read and idle
// timeouts, so a slow client cannot hold a connection forever. No
// Authorization header, token or key is ever written to a log, an error or
// a response.
package server
