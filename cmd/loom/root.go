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
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// newRootCmd assembles the command tree. Each verb lives in its own package
// under cmd/loom; add it here with one line.
func newRootCmd(io *cmdutil.IOStreams) *cobra.Command {
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
	root.AddCommand(
		// commands: keep one per line, sorted
		cmdChat.NewCmdChat(io, nil),
		cmdHistory.NewCmdHistory(io, nil),
		cmdInit.NewCmdInit(io, nil),
		cmdInspect.NewCmdInspect(io, nil),
		cmdMCP.NewCmdMCP(io, nil),
		cmdMemory.NewCmdMemory(io, nil),
		cmdMessages.NewCmdMessages(io, nil),
		cmdRender.NewCmdRender(io, nil),
		cmdServe.NewCmdServe(io, nil),
		cmdSkills.NewCmdSkills(io, nil),
		cmdTokens.NewCmdTokens(io, nil),
		cmdWatch.NewCmdWatch(io, nil),
	)
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
	root := newRootCmd(io)
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
