package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// ConsolidateOptions are the inputs of `loom memory consolidate`.
type ConsolidateOptions struct {
	IO      *cmdutil.IOStreams
	Dir     string
	History string
	All     bool
	DryRun  bool
	Wait    time.Duration
	// Client replaces the configured model client in tests.
	Client llm.Client
}

// newCmdConsolidate returns `loom memory consolidate`.
func newCmdConsolidate(io *cmdutil.IOStreams, runF func(*ConsolidateOptions) error) *cobra.Command {
	opts := &ConsolidateOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "consolidate --history FILE",
		Short: "Fold old conversation into memory/MEMORY.md and memory/HISTORY.md with the model",
		Long: `Send the oldest unconsolidated part of a session file (JSONL, as loom chat
writes under .loom/sessions/) to the configured model, which returns a
history entry and the updated long-term memory. MEMORY.md is rewritten
atomically, the entry is appended to HISTORY.md, and only then does the
session's consolidation pointer move. After three failed attempts the chunk is
archived to HISTORY.md raw, so nothing is lost. The report goes to stdout as
JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.History == "" {
				return cmdutil.FlagErrorf("--history is required")
			}
			if runF != nil {
				return runF(opts)
			}
			return consolidateRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Dir, "workspace", "w", ".", "workspace folder")
	shared.AddExampleFlag(cmd, &opts.Dir, shared.ExampleRefused)
	cmd.Flags().StringVar(&opts.History, "history", "", "session file to consolidate")
	cmd.Flags().BoolVar(&opts.All, "all", false, "consolidate everything after the pointer, not only what passes the threshold")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what would be consolidated without calling the model")
	var alwaysJSON bool
	cmd.Flags().BoolVar(&alwaysJSON, "json", true, "print the report as JSON (always on: the report is JSON)")
	cmd.Flags().DurationVar(&opts.Wait, "wait", time.Minute, "how long to wait for another consolidation of this workspace to finish")
	return cmd
}

func consolidateRun(ctx context.Context, opts *ConsolidateOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// The session must exist: consolidating a file that is not there would
	// report nothing to do and leave a lock file beside the name.
	if fi, err := os.Stat(opts.History); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--history %s: no such file", opts.History)
		}
		return fmt.Errorf("--history %s: %v", opts.History, err)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("--history %s: not a session file", opts.History)
	}
	ws, err := workspace.Open(opts.Dir)
	if err != nil {
		return err
	}
	cfg, err := config.Load(ws)
	if err != nil {
		return err
	}
	lc, err := llm.Resolve(cfg.LLM, nil)
	if err != nil {
		return err
	}
	client := opts.Client
	if client == nil && !opts.DryRun {
		if client, err = llm.New(lc); err != nil {
			var noKey *llm.NoKeyError
			if errors.Is(err, llm.ErrNotConfigured) && !errors.As(err, &noKey) {
				return fmt.Errorf("%w\n\n%s", err, llm.Help)
			}
			return err
		}
		if w := llm.KeyWarning(lc); w != "" {
			fmt.Fprintf(opts.IO.ErrOut, "loom: warning: %s\n", w)
		}
	}
	counter, _ := tokens.ForModel(lc.Model)
	c := consolidate.New(consolidate.Options{
		Client: client, Files: consolidate.WorkspaceFiles{WS: ws}, Counter: counter,
		Threshold: cfg.LLM.Consolidation.ThresholdTokens,
	})
	rep, err := session.ConsolidateFile(ctx, session.ConsolidateFileOptions{
		ConsolidateOptions: session.ConsolidateOptions{All: opts.All, DryRun: opts.DryRun, LockWait: opts.Wait},
		Path:               opts.History, Consolidator: c, Files: consolidate.WorkspaceFiles{WS: ws},
	})
	if rep.Outcomes != nil || err == nil {
		if werr := jsonout.Write(opts.IO.Out, rep); werr != nil && err == nil {
			return werr
		}
	}
	if err != nil {
		return fmt.Errorf("consolidation failed: %w", err)
	}
	if rep.DryRun {
		if rep.PointerTo > rep.PointerFrom {
			fmt.Fprintf(opts.IO.ErrOut, "dry run: would consolidate messages %d-%d; nothing was written\n", rep.PointerFrom, rep.PointerTo)
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "dry run: nothing is due for consolidation; nothing was written\n")
		}
		return nil
	}
	var raw []string
	for _, o := range rep.Outcomes {
		if o.Archived {
			why := o.Refused
			if why == "" && len(o.Failures) > 0 {
				why = o.Failures[len(o.Failures)-1]
			}
			raw = append(raw, fmt.Sprintf("messages %d-%d (%s)", o.From, o.To, why))
		}
	}
	if len(raw) > 0 {
		return fmt.Errorf("consolidation failed: the model's reply could not be used for %s; "+
			"MEMORY.md was left as it was and the messages were kept raw in %s", strings.Join(raw, ", "), memory.HistoryFile)
	}
	return nil
}
