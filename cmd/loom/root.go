package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	cmdChat "github.com/loomctx/loom/cmd/loom/chat"
	"github.com/loomctx/loom/cmd/loom/cmdutil"
	cmdHistory "github.com/loomctx/loom/cmd/loom/history"
	cmdInit "github.com/loomctx/loom/cmd/loom/init"
	cmdInspect "github.com/loomctx/loom/cmd/loom/inspect"
	cmdMemory "github.com/loomctx/loom/cmd/loom/memory"
	cmdMessages "github.com/loomctx/loom/cmd/loom/messages"
	cmdRender "github.com/loomctx/loom/cmd/loom/render"
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
		cmdMemory.NewCmdMemory(io, nil),
		cmdMessages.NewCmdMessages(io, nil),
		cmdRender.NewCmdRender(io, nil),
		cmdSkills.NewCmdSkills(io, nil),
		cmdTokens.NewCmdTokens(io, nil),
		cmdWatch.NewCmdWatch(io, nil),
	)
	return root
}

// run executes the CLI and maps errors to exit codes: 0 success, 1 failure,
// 2 usage error. It is the only place that decides an exit code.
func run(args []string) int {
	io := cmdutil.System()
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
