package shared

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/examples"
	"github.com/loomctx/loom/starter"
)

// ExampleUse says what a command does with a built-in example workspace
// (--example NAME) it is given instead of a folder.
type ExampleUse int

const (
	// ExampleRead: a one-shot command reads a throwaway copy.
	ExampleRead ExampleUse = iota
	// ExampleLive: the command stays up (serve, chat, mcp, watch, the web
	// inspector) on a throwaway copy, whose folder is named on stderr so
	// that it can be edited while the command runs.
	ExampleLive
	// ExampleRefused: the command exists to change the workspace, and a
	// change to a copy removed at exit would be lost; it says how to keep
	// a copy instead.
	ExampleRefused
)

// ExampleFolder writes the built-in example called name into a new
// temporary folder and returns the folder with a func that removes it.
// Commands that need a folder on disk (they write into it, serve it or
// watch it) run on such a copy; render, inspect and messages read the
// example straight from the binary.
func ExampleFolder(name string) (dir string, remove func(), err error) {
	fsys, err := examples.FS(name)
	if err != nil {
		return "", nil, cmdutil.FlagErrorf("%v", err)
	}
	dir, err = os.MkdirTemp("", "loom-example-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	if _, _, err := starter.WriteFS(dir, fsys); err != nil {
		remove()
		return "", nil, err
	}
	return dir, remove, nil
}

// SayExampleFolder tells the user where a live command's example copy is.
func SayExampleFolder(w io.Writer, name, dir string) {
	fmt.Fprintf(w, "loom: example %s copied to %s for this run (removed at exit; to keep one: loom init --example %s DIR)\n", name, dir, name)
}

// AddExampleFlag gives cmd, whose -w flag sets *dir, the flag --example
// NAME: the command then runs on a copy of that built-in example made by
// [ExampleFolder], or refuses it (use ExampleRefused) with the commands
// that keep a copy to work on. It wraps cmd.RunE, so call it after RunE is
// set.
func AddExampleFlag(cmd *cobra.Command, dir *string, use ExampleUse) {
	var name string
	cmd.Flags().StringVar(&name, "example", "", "work on a copy of a built-in example workspace ("+exampleNames()+")")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if name == "" {
			return run(c, args)
		}
		for _, f := range []struct{ name, said string }{{"workspace", "-w"}, {"root", "--root"}} {
			if c.Flags().Changed(f.name) {
				return cmdutil.FlagErrorf("%s and --example cannot be used together", f.said)
			}
		}
		if _, err := examples.FS(name); err != nil {
			return cmdutil.FlagErrorf("%v", err)
		}
		if use == ExampleRefused {
			return cmdutil.FlagErrorf("%s changes a workspace, and an example is copied afresh for every run, so the change would be lost; "+
				"keep a copy and use it: loom init --example %s DIR, then %s -w DIR", c.CommandPath(), name, c.CommandPath())
		}
		folder, remove, err := ExampleFolder(name)
		if err != nil {
			return err
		}
		defer remove()
		if use == ExampleLive {
			SayExampleFolder(c.ErrOrStderr(), name, folder)
		}
		*dir = folder
		return run(c, args)
	}
}

func exampleNames() string { return strings.Join(examples.Names(), " or ") }

// ExampleFile returns the file rel (slash-separated, as `loom init
// --example` writes it) of the built-in example called name, for a command
// whose argument is a file rather than a workspace (tokens, history clean).
func ExampleFile(name, rel string) ([]byte, error) {
	fsys, err := examples.FS(name)
	if err != nil {
		return nil, cmdutil.FlagErrorf("%v", err)
	}
	data, err := fs.ReadFile(fsys, path.Clean(filepath.ToSlash(rel)))
	if err != nil {
		var files []string
		fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		return nil, cmdutil.FlagErrorf("example %s has no file %q; its files: %s", name, rel, strings.Join(files, ", "))
	}
	return data, nil
}
