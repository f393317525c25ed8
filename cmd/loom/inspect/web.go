package inspect

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/loomctx/loom/inspector"
	"github.com/loomctx/loom/server"
)

// webRun serves the inspector for the workspace on a loopback address and
// prints the URL to open, until interrupted.
func webRun(ctx context.Context, opts *Options) error {
	dir, done, err := opts.Flags.Folder(opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer done()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := server.New(server.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AllowedHosts: opts.AllowedHosts, CORSOrigins: opts.CORSOrigins})
	if err != nil {
		return err
	}
	if err := inspector.Mount(s); err != nil {
		s.Close()
		return err
	}
	q := url.Values{}
	f := &opts.Flags
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("channel", f.Channel)
	set("user", f.User)
	if f.Budget > 0 {
		set("budget", strconv.Itoa(f.Budget))
	}
	set("encoding", f.Encoding)
	set("model", f.Model)
	set("tools", f.Tools)
	if f.TestMode {
		set("test_mode", "1")
	}
	if f.Subagent {
		set("subagent", "1")
	}
	return s.ListenAndServe(ctx, opts.Addr, func(a net.Addr) {
		u := "http://" + a.String() + "/inspect/default/"
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		fmt.Fprintf(opts.IO.Out, "%s\n", u)
		fmt.Fprintln(opts.IO.ErrOut, "loom: open the URL above in a browser; Ctrl-C stops")
	})
}
