// Package buildinfo holds what a build of loom says about itself, in one
// place, so that every front end (the CLI's --version, the MCP server over
// stdio and over HTTP) reports the same version.
package buildinfo

// Version is loom's version; a release build sets it with
// -ldflags "-X github.com/loomctx/loom/internal/buildinfo.Version=…".
var Version = "0.1.0-dev"
