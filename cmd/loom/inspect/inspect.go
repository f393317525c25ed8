// Package inspect implements `loom inspect`: what each section of a prompt
// costs, where it came from, and what was left out.
package inspect

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/render"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/internal/jsonout"
)

// Options are the inputs of `loom inspect`.
type Options struct {
	IO    *cmdutil.IOStreams
	Flags shared.RenderFlags
	JSON  bool
	// Web serves the inspector page on Addr instead of printing a table.
	Web  bool
	Addr string
	// AllowedHosts and CORSOrigins are server.Options' for --web.
	AllowedHosts []string
	CORSOrigins  []string
}

// NewCmdInspect returns the inspect command. runF replaces the run function
// in tests.
func NewCmdInspect(io *cmdutil.IOStreams, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: io}
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Show what each section of the prompt costs and what was left out",
		Example: `  loom inspect -w ./agent
  loom inspect --example analyst --budget 2500
  loom inspect --example assistant --web`,
		Long: `Render the prompt as loom render does, but print a table instead of the
prompt: each section, the files it came from, its tokens, and whether it was
kept, dropped or truncated (and why), then the totals and every diagnostic.

With --web, serve the same as a live web page on a loopback address and print
its URL: sections with their text, a token bar, controls that re-render at
once, skills, memories and a cache diff between two renders. The page
answers only loopback Host names and those given with --allowed-hosts, and
takes its forms only from itself (see loom serve --help).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			if opts.Web {
				return webRun(cmd.Context(), opts)
			}
			return inspectRun(cmd.Context(), opts)
		},
	}
	opts.Flags.Bind(cmd)
	cmdutil.AddJSONFlag(cmd.Flags(), &opts.JSON)
	cmd.Flags().BoolVar(&opts.Web, "web", false, "serve the inspector web page and print its URL")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "address for --web (loopback only)")
	cmd.Flags().StringSliceVar(&opts.AllowedHosts, "allowed-hosts", nil, "with --web: Host names answered besides loopback ones, comma-separated")
	cmd.Flags().StringSliceVar(&opts.CORSOrigins, "cors-origin", nil, "with --web: a web origin whose pages may call the server; repeatable")
	return cmd
}

func inspectRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := render.Run(ctx, &opts.Flags)
	if res == nil {
		return err
	}
	if opts.JSON {
		if werr := jsonout.Write(opts.IO.Out, &res.Report); werr != nil {
			return werr
		}
		return err
	}
	render.WriteReport(opts.IO.Out, &res.Report)
	return err
}
