// Package history is the `loom history` command group: tools for the
// conversation history an agent persists between turns.
package history

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/messages"
)

// CleanOptions holds what `loom history clean` was asked to do.
type CleanOptions struct {
	IO           *cmdutil.IOStreams
	File         string // path, or "-" for standard input
	Example      string // when set, File is a file of this built-in example
	MaxToolChars int
}

// NewCmdHistory returns the `loom history` command. runF replaces the clean
// run function in tests; nil means cleanRun.
func NewCmdHistory(ios *cmdutil.IOStreams, runF func(*CleanOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history <command>",
		Short: "Work with a persisted conversation history",
	}
	cmd.AddCommand(newCmdClean(ios, runF))
	return cmd
}

func newCmdClean(ios *cmdutil.IOStreams, runF func(*CleanOptions) error) *cobra.Command {
	opts := &CleanOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "clean [--max-tool-chars N] FILE",
		Short: "Clean a history for replay and print it as JSONL",
		Long: `Read a history (JSONL or a JSON array of OpenAI-style messages; "-" for
standard input) and print it cleaned, one message per line, the way an agent
should persist it so the next turn replays it byte for byte:

- the runtime context block loom adds is removed, by its markers;
- images become "[image]";
- tool results over --max-tool-chars characters (16000 by default) are cut,
  with a marker saying how long they were;
- empty messages are dropped, and tool calls without results and results
  without calls are dropped, so each call keeps its result;
- the history starts at the first user message.

Cleaning twice gives the same output. What was changed is counted on
standard error.

With --example NAME, FILE is a file of that built-in example workspace: the
assistant example keeps a session at .loom/sessions/cli_mira.jsonl.`,
		Example: `  loom history clean session.jsonl > session.clean.jsonl
  loom history clean --max-tool-chars 4000 - < session.json
  loom history clean --example assistant --max-tool-chars 200 .loom/sessions/cli_mira.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return cleanRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Example, "example", "", "FILE is a file of this built-in example workspace")
	cmd.Flags().IntVar(&opts.MaxToolChars, "max-tool-chars", messages.DefaultMaxToolChars, "cut tool results longer than this many characters")
	return cmd
}

func cleanRun(o *CleanOptions) error {
	if o.MaxToolChars <= 0 {
		return cmdutil.FlagErrorf("--max-tool-chars must be a positive number")
	}
	var msgs []messages.Message
	var err error
	switch {
	case o.Example != "":
		data, rerr := shared.ExampleFile(o.Example, o.File)
		if rerr != nil {
			return rerr
		}
		msgs, err = messages.ReadHistory(bytes.NewReader(data), o.File, messages.HistoryOptions{})
	case o.File == "-":
		msgs, err = messages.ReadHistory(o.IO.In, "<stdin>", messages.HistoryOptions{})
	default:
		msgs, err = messages.ReadHistoryFile(o.File, messages.HistoryOptions{})
	}
	if err != nil {
		return err
	}
	cleaned, rep := messages.Clean(msgs, messages.CleanOptions{MaxToolChars: o.MaxToolChars})
	w := bufio.NewWriter(o.IO.Out)
	if err := messages.WriteJSONL(w, cleaned); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	writeSummary(o.IO.ErrOut, len(msgs), len(cleaned), rep)
	return nil
}

func writeSummary(w io.Writer, in, out int, r messages.CleanReport) {
	fmt.Fprintf(w, "loom: %d messages in, %d out", in, out)
	for _, c := range []struct {
		n    int
		what string
	}{
		{r.RuntimeBlocks, "runtime blocks removed"},
		{r.Images, "images replaced"},
		{r.ToolResultsCut, "tool results cut"},
		{r.EmptyDropped, "empty messages dropped"},
		{r.LeadingDropped, "leading messages dropped"},
		{r.OrphanResults, "orphan tool results dropped"},
		{r.UnansweredToolCalls, "unanswered tool calls dropped"},
	} {
		if c.n > 0 {
			fmt.Fprintf(w, "; %d %s", c.n, c.what)
		}
	}
	fmt.Fprintln(w)
}
