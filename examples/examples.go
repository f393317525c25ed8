// Package examples holds complete, filled-in workspaces, one per preset, so
// that `loom render --example NAME` shows what loom builds on a machine with
// no workspace of its own.
package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// The folders are named after the examples; all: keeps dotfiles, should one
// ever be added.
//
//go:embed all:assistant all:analyst
var files embed.FS

// Names returns the names of the example workspaces, sorted.
func Names() []string {
	entries, err := files.ReadDir(".")
	if err != nil {
		// The folders are embedded at build time; they cannot be missing.
		panic(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// FS returns the example workspace called name, rooted at the workspace root
// (so "loom.yaml", "memory/MEMORY.md" and so on). An unknown name is an error
// that lists the known ones.
func FS(name string) (fs.FS, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("unknown example %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return fs.Sub(files, name)
}
