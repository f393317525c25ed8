// Package initcmd implements `loom init`, which writes a starter workspace.
// (The folder is cmd/loom/init; "init" cannot name a Go package.)
package initcmd

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/examples"
	"github.com/loomctx/loom/starter"
)

// DefaultPreset is the preset written when --preset is not given.
const DefaultPreset = "assistant"

// InitOptions are the inputs of `loom init`.
type InitOptions struct {
	IO     *cmdutil.IOStreams
	Dir    string
	Preset string
	// Example, when set, names the built-in example workspace to copy
	// instead of the preset's starter files.
	Example string
}

// NewCmdInit returns the `loom init` command. runF replaces initRun in tests.
func NewCmdInit(io *cmdutil.IOStreams, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter workspace",
		Long: `Write a starter workspace into DIR (default: the current folder), creating it
if needed. The files are templates to edit; while one is unchanged, loom leaves
it out of the prompt. An existing file is never overwritten.

With --example NAME, write a copy of that built-in example instead: a
complete, filled-in workspace to try every command on, and to change.

Presets: ` + strings.Join(starter.Presets(), ", ") + `.`,
		Example: `  loom init my-agent
  loom init warehouse --preset analyst
  loom init --example assistant agent`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return cmdutil.FlagErrorf("init takes at most one folder, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = "."
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if opts.Example != "" {
				if cmd.Flags().Changed("preset") {
					return cmdutil.FlagErrorf("--preset and --example cannot be used together")
				}
				if _, err := examples.FS(opts.Example); err != nil {
					return cmdutil.FlagErrorf("--example: %v", err)
				}
			}
			if !slices.Contains(starter.Presets(), opts.Preset) {
				return cmdutil.FlagErrorf("unknown preset %q (valid: %s)", opts.Preset, strings.Join(starter.Presets(), ", "))
			}
			if runF != nil {
				return runF(opts)
			}
			return initRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Preset, "preset", DefaultPreset, "prompt structure: "+strings.Join(starter.Presets(), " or "))
	cmd.Flags().StringVar(&opts.Example, "example", "", "write a copy of a built-in example workspace instead ("+strings.Join(examples.Names(), " or ")+")")
	cmd.RegisterFlagCompletionFunc("preset", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return starter.Presets(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// initRun writes the starter files and says what it did: created files on
// Out, one per line, so the list can be piped; skipped files and the hint on
// ErrOut.
func initRun(opts *InitOptions) error {
	var created, skipped []string
	var err error
	if opts.Example != "" {
		var fsys fs.FS
		if fsys, err = examples.FS(opts.Example); err == nil {
			created, skipped, err = starter.WriteFS(opts.Dir, fsys)
		}
	} else {
		created, skipped, err = starter.Write(opts.Dir, opts.Preset)
	}
	for _, rel := range created {
		fmt.Fprintf(opts.IO.Out, "created %s\n", filepath.Join(opts.Dir, filepath.FromSlash(rel)))
	}
	for _, rel := range skipped {
		fmt.Fprintf(opts.IO.ErrOut, "skipped %s (exists)\n", filepath.Join(opts.Dir, filepath.FromSlash(rel)))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "next: loom render -w %s\n", shellQuote(opts.Dir))
	return nil
}

// shellQuote returns s as one shell word, so the hint can be pasted.
func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+@%,", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
