// Package embedded picks named sets of files out of an embedded tree, as the
// starter templates and the example workspaces both need.
package embedded

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// Names returns the names of the folders in dir of fsys, sorted. The tree is
// embedded at build time, so a missing dir is a programmer's mistake.
func Names(fsys fs.FS, dir string) []string {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
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

// Sub returns the folder dir/name of fsys as its own file system. An unknown
// name is an error that says what kind of thing was asked for and lists the
// known ones.
func Sub(fsys fs.FS, dir, name, kind string) (fs.FS, error) {
	names := Names(fsys, dir)
	if !slices.Contains(names, name) {
		return nil, fmt.Errorf("unknown %s %q (valid: %s)", kind, name, strings.Join(names, ", "))
	}
	if dir != "." {
		name = dir + "/" + name
	}
	return fs.Sub(fsys, name)
}
