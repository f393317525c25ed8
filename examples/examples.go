// Package examples holds complete, filled-in workspaces, one per preset, so
// that every loom command, given --example NAME, can be tried on a machine
// with no workspace of its own (`loom init --example NAME DIR` copies one).
package examples

import (
	"embed"
	"io/fs"

	"github.com/loomctx/loom/internal/embedded"
)

// The folders are named after the examples; all: keeps dotfiles, should one
// ever be added.
//
//go:embed all:assistant all:analyst
var files embed.FS

// Names returns the names of the example workspaces, sorted.
func Names() []string { return embedded.Names(files, ".") }

// FS returns the example workspace called name, rooted at the workspace root
// (so "loom.yaml", "memory/MEMORY.md" and so on). An unknown name is an error
// that lists the known ones.
func FS(name string) (fs.FS, error) { return embedded.Sub(files, ".", name, "example") }
