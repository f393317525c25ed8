// Package mcp implements `loom mcp`: serve a workspace over the Model
// Context Protocol on stdin and stdout.
package mcp

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/mcpserver"
	"github.com/loomctx/loom/workspace"
)

// Options are the inputs of `loom mcp`.
type Options struct {
	IO   *cmdutil.IOStreams
	Dir  string
	User string
	Now  string
	Poll time.Duration
	// Version is what the server tells clients it is.
	Version string
}

// NewCmdMCP returns the mcp command. runF replaces the run function in tests.
func NewCmdMCP(io *cmdutil.IOStreams, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: io}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the workspace's skills, prompt and memory to MCP clients over stdio",
		Example: `  loom mcp -w ./agent --user ana
  loom mcp --example assistant`,
		Long: `Serve a workspace over the Model Context Protocol on stdin and stdout, for
Claude Code, Claude Desktop, VS Code, Cursor and any other MCP client:

  prompts    every skill (with an optional "message" argument), and "system",
             the rendered system prompt (arguments channel, user, budget)
  resources  loom://prompt, loom://report, loom://skills/NAME, and
             loom://files/PATH for AGENTS.md, SOUL.md, USER.md, TOOLS.md,
             RULES.md and memory/MEMORY.md
  tools      remember, recall, forget, render_prompt, count_tokens

When a workspace file changes, clients are told (list_changed, or
resources/updated for subscribers). Logs go to stderr.

  claude mcp add loom -- loom mcp -w /path/to/workspace`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Version == "" {
				opts.Version = cmd.Root().Version
			}
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
	fl := cmd.Flags()
	fl.StringVarP(&opts.Dir, "workspace", "w", ".", "workspace folder")
	shared.AddExampleFlag(cmd, &opts.Dir, shared.ExampleLive)
	fl.StringVar(&opts.User, "user", "", "serve this user's memories only (default: the whole workspace)")
	fl.StringVar(&opts.Now, "now", "", "fix the clock, as RFC 3339 (for tests and reproducible output)")
	fl.DurationVar(&opts.Poll, "poll", 0, "how often to look for workspace changes (besides the change feed; default 1s)")
	return cmd
}

// Run serves until the client closes stdin or ctx ends.
func Run(ctx context.Context, opts *Options) error {
	ws, err := workspace.Open(opts.Dir)
	if err != nil {
		return err
	}
	defer ws.Close()
	so := mcpserver.Options{
		User:    opts.User,
		Poll:    opts.Poll,
		Version: opts.Version,
		Logger:  slog.New(slog.NewTextHandler(opts.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if opts.Poll < 0 {
		return cmdutil.FlagErrorf("--poll must not be negative")
	}
	if opts.Now != "" {
		t, err := time.Parse(time.RFC3339, opts.Now)
		if err != nil {
			return cmdutil.FlagErrorf("--now: %v", err)
		}
		so.Now = t
	}
	s, err := mcpserver.New(ws, so)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx, &sdk.IOTransport{Reader: readCloser(opts.IO.In), Writer: writeCloser(opts.IO.Out)})
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return nopReadCloser{r}
}

func writeCloser(w io.Writer) io.WriteCloser {
	if wc, ok := w.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{w}
}
