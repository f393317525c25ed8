// Package render implements `loom render`: the system prompt of a workspace.
package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/prompt"
)

// Options are the inputs of `loom render`.
type Options struct {
	IO     *cmdutil.IOStreams
	Flags  shared.RenderFlags
	Format string // markdown or json
	Report bool   // print the report as a table on stderr
}

// NewCmdRender returns the render command. runF replaces the run function in
// tests.
func NewCmdRender(io *cmdutil.IOStreams, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: io}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the system prompt a workspace gives its agent",
		Example: `  loom render -w ./agent --report
  loom render --example assistant --report
  loom render --example analyst --channel slack --budget 3000`,
		Long: `Render the system prompt of a workspace folder (-w, default the current folder).

The prompt goes to stdout. Warnings about files that were refused or left out
go to stderr as "loom: warning: <file>: <reason>". With --report, a table of
every section, its tokens and whether it was kept, dropped or truncated goes to
stderr too; --format json prints the prompt and that report as one object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format != "markdown" && opts.Format != "json" {
				return cmdutil.FlagErrorf("--format must be markdown or json")
			}
			if runF != nil {
				return runF(opts)
			}
			return renderRun(cmd.Context(), opts)
		},
	}
	opts.Flags.Bind(cmd)
	cmd.Flags().StringVar(&opts.Format, "format", "markdown", "output format: markdown or json")
	cmdutil.AddJSONFormatAlias(cmd.Flags(), &opts.Format)
	cmd.Flags().BoolVar(&opts.Report, "report", false, "print the token report as a table on stderr")
	return cmd
}

func renderRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	defer oneShotGC()()
	res, err := runRender(ctx, &opts.Flags, opts.Format == "markdown" && !opts.Report)
	if res == nil {
		return err
	}
	if opts.Format == "json" {
		if werr := jsonout.Write(opts.IO.Out, res); werr != nil {
			return werr
		}
	} else {
		if _, werr := io.WriteString(opts.IO.Out, res.Prompt); werr != nil {
			return werr
		}
		if len(res.Prompt) > 0 && res.Prompt[len(res.Prompt)-1] != '\n' {
			fmt.Fprintln(opts.IO.Out)
		}
	}
	shared.PrintDiagnostics(opts.IO.ErrOut, res)
	if opts.Report {
		writeReport(opts.IO.ErrOut, &res.Report, false)
	}
	return err
}

// oneShotGC sets the collector up for one render in a process that ends
// after it: no collection until the heap nears a bound, since collecting a
// heap that is about to be dropped whole is work for nothing (it was about
// a fifth of a cold render's CPU). A GOGC or GOMEMLIMIT the user set wins.
// It returns a func that puts the settings back, for a process that goes
// on (a test).
func oneShotGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(oneShotHeap)
	pct := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}

// oneShotHeap is the heap a one-shot render may reach before collecting:
// a render of a large workspace needs a few tens of MiB.
const oneShotHeap = 256 << 20

// Run renders the prompt the flags describe. On an over-budget prompt it
// returns both the result and the error.
func Run(ctx context.Context, f *shared.RenderFlags) (*prompt.Result, error) {
	return runRender(ctx, f, false)
}

// runRender is Run, with token counting skipped when only the text is wanted.
func runRender(ctx context.Context, f *shared.RenderFlags, textOnly bool) (*prompt.Result, error) {
	o, err := f.Options()
	if err != nil {
		return nil, err
	}
	o.NoCounts = textOnly
	ws, err := f.Workspace()
	if err != nil {
		return nil, err
	}
	// One descriptor of the workspace root serves every read of this
	// render, where each read would open and close its own.
	defer ws.Hold()()
	// One render, then the process ends: keep no parts for another.
	b, closeBuilder, err := shared.NewOneShotBuilder(ctx, ws)
	if err != nil {
		return nil, err
	}
	defer closeBuilder()
	res, err := b.Render(ctx, o)
	var over *md.OverBudgetError
	if err != nil && !errors.As(err, &over) {
		return nil, err
	}
	return res, err
}

// WriteReport prints a report as a table: section, sources, tokens, status,
// then the totals and the diagnostics.
func WriteReport(w io.Writer, r *prompt.Report) { writeReport(w, r, true) }

// writeReport prints the table, and the diagnostics when diags is set (loom
// render prints them on their own already). Memories left out for the same
// reason share one row: a store of thousands would otherwise fill the table
// with rows of the same words. The JSON report keeps one entry each.
func writeReport(w io.Writer, r *prompt.Report, diags bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SECTION\tSOURCES\tTOKENS\tSTATUS\tPRIORITY\tREASON")
	secs := r.Sections()
	for i := 0; i < len(secs); i++ {
		s := secs[i]
		if isMemory(s) {
			j, tokens := i, 0
			for ; j < len(secs) && isMemory(secs[j]) && foldKey(secs[j].Reason) == foldKey(s.Reason); j++ {
				tokens += secs[j].Tokens
			}
			if j-i > 1 {
				fmt.Fprintf(tw, "%d memories\t-\t%d\t%s\t-\t%s\n", j-i, tokens, s.Status, foldKey(s.Reason))
				i = j - 1
				continue
			}
		}
		src := "-"
		if len(s.Sources) > 0 {
			src = s.Sources[0]
			if len(s.Sources) > 1 {
				src += fmt.Sprintf(" (+%d)", len(s.Sources)-1)
			}
		}
		prio := "-"
		if s.Priority != nil {
			prio = fmt.Sprint(*s.Priority)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, src, s.Tokens, s.Status, prio, s.Reason)
	}
	tw.Flush()
	budget := "none"
	if r.Budget != nil {
		budget = fmt.Sprint(*r.Budget)
	}
	fmt.Fprintf(w, "total: %d tokens (%s), budget: %s, preset: %s\n", r.Tokens, r.Encoding, budget, r.Preset)
	if diags && len(r.Diagnostics) > 0 {
		fmt.Fprintf(w, "diagnostics:\n")
		for _, d := range r.Diagnostics {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
}

// isMemory reports whether e is one structured memory left out of the prompt.
func isMemory(e md.Entry) bool {
	return e.Status == md.Dropped && strings.HasPrefix(e.Name, "memory/")
}

// foldKey is a reason without its per-entry detail in parentheses.
func foldKey(reason string) string {
	if i := strings.Index(reason, " ("); i >= 0 {
		return reason[:i]
	}
	return reason
}
