// Package watch implements `loom watch`: re-render a workspace's prompt
// every time a file it reads changes, from the workspace's change feed.
package watch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/memory"
	lskills "github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// Options are the inputs of `loom watch`.
type Options struct {
	IO    *cmdutil.IOStreams
	Flags shared.RenderFlags
	Diff  bool
	// Debounce overrides loom.yaml's skills.debounce when set.
	Debounce time.Duration
	// Ready, when set, is called once the watcher is running: tests wait on
	// it instead of sleeping.
	Ready func()
}

// NewCmdWatch returns the watch command. runF replaces the run function in
// tests.
func NewCmdWatch(io *cmdutil.IOStreams, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: io}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Re-render the prompt whenever a file it reads changes",
		Example: `  loom watch -w ./agent --diff
  loom watch --example assistant --diff`,
		Long: `Render the prompt, then watch every file and folder the render read (the
root files, agent/prompts/, agent/dialects/, databases/, skills/, memory/ and
the rest) and render again after every change, once edits have settled for
the debounce time (loom.yaml skills.debounce, default 300ms). Each new prompt goes
to stdout; with --diff only the lines that changed, as "-" and "+" lines.
Stop with Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
			defer stop()
			return Run(ctx, opts)
		},
	}
	opts.Flags.Bind(cmd)
	cmd.Flags().BoolVar(&opts.Diff, "diff", false, "print only what changed after the first render")
	cmd.Flags().DurationVar(&opts.Debounce, "debounce", 0, "quiet time before re-rendering (default: loom.yaml's skills.debounce)")
	return cmd
}

// Run renders once, then again on every change, until ctx ends.
func Run(ctx context.Context, opts *Options) error {
	dir, done, err := opts.Flags.Folder(opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer done()
	ws, err := workspace.Open(dir)
	if err != nil {
		return err
	}
	cfg, err := config.Load(ws)
	if err != nil {
		return err
	}
	_, wo := lskills.FromConfig(cfg)
	debounce := wo.Debounce
	if opts.Debounce != 0 {
		debounce = opts.Debounce
	}
	po, err := opts.Flags.Options()
	if err != nil {
		return err
	}
	// One builder for the whole watch, over the workspace's change feed:
	// the feed reports an edit to any file the render read (the root,
	// agent/prompts/, agent/dialects/, databases/, skills/, memory/...), and
	// a re-render re-reads and re-tokenizes only the files that changed.
	feed, cancel, err := ws.Subscribe(debounce)
	if err != nil {
		return err
	}
	defer ws.Close()
	defer cancel()
	b, closeBuilder, err := shared.NewBuilder(ctx, ws)
	if err != nil {
		return err
	}
	defer closeBuilder()
	render := func(ctx context.Context) (string, error) {
		res, err := b.Render(ctx, po)
		if res == nil {
			return "", err
		}
		shared.PrintDiagnostics(opts.IO.ErrOut, res)
		return res.Prompt, nil // an over-budget prompt is still shown
	}

	prev, err := render(ctx)
	if err != nil {
		return err
	}
	// A render reads the memory database, and SQLite's side files moving
	// under that read are not a change to print a render for.
	quiet := memory.NewReadFilter(ws)
	writeText(opts.IO.Out, prev)
	if opts.Ready != nil {
		opts.Ready()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case c, ok := <-feed:
			if !ok {
				return nil
			}
			if c.Err != nil {
				return fmt.Errorf("watch: %w", c.Err)
			}
			if quiet.OnlyRead(c.Paths) {
				continue
			}
			next, err := render(ctx)
			if err != nil {
				fmt.Fprintf(opts.IO.ErrOut, "loom: %v\n", err)
				continue
			}
			fmt.Fprintf(opts.IO.ErrOut, "loom: changed: %s\n", changedNames(ws.Root(), c.Paths))
			if opts.Diff {
				d := Diff(prev, next)
				if d == "" {
					d = "(no change to the prompt)\n"
				}
				io.WriteString(opts.IO.Out, d)
			} else {
				writeText(opts.IO.Out, next)
			}
			prev = next
		}
	}
}

// changedNames lists paths relative to root, quoted where they hold
// control characters.
func changedNames(root string, paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		if rel, err := filepath.Rel(root, p); err == nil {
			p = filepath.ToSlash(rel)
		}
		names[i] = workspace.QuotePath(p)
	}
	return strings.Join(names, ", ")
}

func writeText(w io.Writer, s string) {
	io.WriteString(w, s)
	if !strings.HasSuffix(s, "\n") {
		io.WriteString(w, "\n")
	}
}

// Diff returns the lines that differ between a and b: an "@@ line N" header
// per changed run, then "-" lines from a and "+" lines from b. Equal texts
// give "". Common lines at both ends are skipped first, so a small edit to a
// long prompt costs little; the middle is compared by longest common
// subsequence.
func Diff(a, b string) string {
	if a == b {
		return ""
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	am, bm := al[pre:len(al)-suf], bl[pre:len(bl)-suf]
	// lcs[i][j] is the LCS length of am[i:] and bm[j:].
	lcs := make([][]int, len(am)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bm)+1)
	}
	for i := len(am) - 1; i >= 0; i-- {
		for j := len(bm) - 1; j >= 0; j-- {
			if am[i] == bm[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	inRun := false
	header := func(line int) {
		if !inRun {
			fmt.Fprintf(&out, "@@ line %d\n", line)
			inRun = true
		}
	}
	i, j := 0, 0
	for i < len(am) || j < len(bm) {
		switch {
		case i < len(am) && j < len(bm) && am[i] == bm[j]:
			i, j = i+1, j+1
			inRun = false
		case i < len(am) && (j == len(bm) || lcs[i+1][j] >= lcs[i][j+1]):
			header(pre + j + 1)
			out.WriteString("-" + am[i] + "\n")
			i++
		default:
			header(pre + j + 1)
			out.WriteString("+" + bm[j] + "\n")
			j++
		}
	}
	return out.String()
}
