package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	cmdChat "github.com/loomctx/loom/cmd/loom/chat"
	"github.com/loomctx/loom/cmd/loom/cmdutil"
	cmdHistory "github.com/loomctx/loom/cmd/loom/history"
	cmdInit "github.com/loomctx/loom/cmd/loom/init"
	cmdInspect "github.com/loomctx/loom/cmd/loom/inspect"
	cmdMCP "github.com/loomctx/loom/cmd/loom/mcp"
	cmdMemory "github.com/loomctx/loom/cmd/loom/memory"
	cmdMessages "github.com/loomctx/loom/cmd/loom/messages"
	cmdRender "github.com/loomctx/loom/cmd/loom/render"
	cmdServe "github.com/loomctx/loom/cmd/loom/serve"
	cmdSkills "github.com/loomctx/loom/cmd/loom/skills"
	cmdTokens "github.com/loomctx/loom/cmd/loom/tokens"
	cmdWatch "github.com/loomctx/loom/cmd/loom/watch"
	"github.com/loomctx/loom/internal/buildinfo"
)

// version is loom's version, set at build time in package buildinfo (see
// there), so that the MCP server reports the same one over HTTP.
var version = buildinfo.Version

// commands are the verbs, each in its own package under cmd/loom; add one
// here with one line. keep them sorted.
var commands = []struct {
	name string
	new  func(*cmdutil.IOStreams) *cobra.Command
}{
	{"chat", func(io *cmdutil.IOStreams) *cobra.Command { return cmdChat.NewCmdChat(io, nil) }},
	{"history", func(io *cmdutil.IOStreams) *cobra.Command { return cmdHistory.NewCmdHistory(io, nil) }},
	{"init", func(io *cmdutil.IOStreams) *cobra.Command { return cmdInit.NewCmdInit(io, nil) }},
	{"inspect", func(io *cmdutil.IOStreams) *cobra.Command { return cmdInspect.NewCmdInspect(io, nil) }},
	{"mcp", func(io *cmdutil.IOStreams) *cobra.Command { return cmdMCP.NewCmdMCP(io, nil) }},
	{"memory", func(io *cmdutil.IOStreams) *cobra.Command { return cmdMemory.NewCmdMemory(io, nil) }},
	{"messages", func(io *cmdutil.IOStreams) *cobra.Command { return cmdMessages.NewCmdMessages(io, nil) }},
	{"render", func(io *cmdutil.IOStreams) *cobra.Command { return cmdRender.NewCmdRender(io, nil) }},
	{"serve", func(io *cmdutil.IOStreams) *cobra.Command { return cmdServe.NewCmdServe(io, nil) }},
	{"skills", func(io *cmdutil.IOStreams) *cobra.Command { return cmdSkills.NewCmdSkills(io, nil) }},
	{"tokens", func(io *cmdutil.IOStreams) *cobra.Command { return cmdTokens.NewCmdTokens(io, nil) }},
	{"watch", func(io *cmdutil.IOStreams) *cobra.Command { return cmdWatch.NewCmdWatch(io, nil) }},
}

// needed returns which commands a run with these arguments can reach: the
// one its first word names; none when there is no word and no call for
// help (loom --version); else all of them, which help, suggestions for a
// mistyped command and shell completion list. Building a command makes its
// flag set and its subcommands, work a run that does not use it should not
// pay for.
func needed(args []string) (name string, all bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return "", true
		case a == "-h" || a == "--help":
			return "", true
		case a == "--memory-db":
			i++ // its value
		case strings.HasPrefix(a, "-"):
		default:
			for _, c := range commands {
				if c.name == a {
					return a, false
				}
			}
			return "", true
		}
	}
	return "", len(args) == 0
}

// newRootCmd assembles the command tree for a run with these arguments.
func newRootCmd(io *cmdutil.IOStreams, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:           "loom",
		Short:         "Assemble an agent's system prompt and message list from a workspace folder",
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cmdutil.FlagErrorf("%s", err)
	})
	name, all := needed(args)
	for _, c := range commands {
		if all || c.name == name {
			root.AddCommand(c.new(io))
		}
	}
	cmdutil.AddMemoryDBFlag(root.PersistentFlags())
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return cmdutil.FlagErrorf("unknown help topic %q", strings.Join(args, " "))
			}
			return cmd.Help()
		},
	})
	usageErrors(root)
	return root
}

// usageErrors makes every argument mistake a usage error (exit 2): a
// command's own argument check, an unknown command at the top, and an
// unknown subcommand of a group such as `loom memory frob`, which cobra
// would otherwise answer with its help and exit 0.
func usageErrors(c *cobra.Command) {
	switch {
	case c.HasSubCommands() && !c.Runnable():
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
				if cmd.SuggestionsMinimumDistance <= 0 {
					cmd.SuggestionsMinimumDistance = 2
				}
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					msg += "; did you mean " + strings.Join(s, " or ") + "?"
				}
				return cmdutil.FlagErrorf("%s", msg)
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	case c.Args != nil:
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				var fe *cmdutil.FlagError
				if errors.As(err, &fe) {
					return err
				}
				return cmdutil.FlagErrorf("%s", err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageErrors(sub)
	}
}

// run executes the CLI and maps errors to exit codes: 0 success, 1 failure,
// 2 usage error. It is the only place that decides an exit code.
func run(args []string) int { return runWith(cmdutil.System(), args) }

func runWith(io *cmdutil.IOStreams, args []string) int {
	root := newRootCmd(io, args)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var flagErr *cmdutil.FlagError
	var silent *cmdutil.SilentError
	switch {
	case errors.As(err, &silent):
		return silent.Code
	case errors.As(err, &flagErr):
		fmt.Fprintf(io.ErrOut, "loom: %v\n", err)
		fmt.Fprintln(io.ErrOut, "Run 'loom help' for usage.")
		return 2
	default:
		fmt.Fprintf(io.ErrOut, "loom: %v\n", err)
		return 1
	}
}
