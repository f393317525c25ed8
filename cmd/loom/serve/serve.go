// Package serve implements `loom serve`: loom's HTTP API over one workspace
// or a folder of them (package server).
package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/gateway"
	"github.com/loomctx/loom/server"
)

// Options are the inputs of `loom serve`.
type Options struct {
	IO           *cmdutil.IOStreams
	Dir          string
	Root         string
	Addr         string
	TokenEnv     string
	LogFormat    string
	LogLevel     string
	MaxBodyBytes int64
	DrainTimeout time.Duration
	NoWatch      bool
	Store        string
	DSNEnv       string
	AllowedHosts []string
	CORSOrigins  []string

	// Mounts, when set, attach other front ends to the server before it
	// serves (the gateway, MCP, the inspector).
	Mounts []func(*server.Server) error
	// Started, when set, is called with the address once listening.
	Started func(net.Addr)
}

// Mounts are applied to every server `loom serve` starts. Front ends that
// attach to it (MCP, the inspector, the gateway) add themselves here from
// their own package's init, or the root command passes them in.
var Mounts []func(*server.Server) error

// NewCmdServe returns the serve command. runF replaces the run function in
// tests.
func NewCmdServe(io *cmdutil.IOStreams, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: io}
	cmd := &cobra.Command{
		Use:   "serve [-w DIR | --root DIR] [--addr HOST:PORT]",
		Short: "Serve loom's HTTP API: prompts, message lists, skills, memories, turns",
		Long: `Serve loom's JSON API under /v1 for agents written in any language.

-w DIR serves one workspace, named "default" in routes; --root DIR serves every
plain sub-folder of DIR under its own name. Every workspace served is watched,
so a render with no file changed reads no file.

By default the server listens on 127.0.0.1:7411. A non-loopback --addr needs
bearer tokens: --token-env NAME names a variable holding one or more tokens
(separated by commas or white space); every route but /healthz then needs
"Authorization: Bearer TOKEN".

Every route answers only requests whose Host is a loopback name (localhost,
127.0.0.1, [::1]) or one given with --allowed-hosts (421 otherwise, which
stops DNS rebinding); list the names clients use when serving beyond
loopback. A request that changes state from another web origin is refused
(403), and a body must be sent as application/json (415), so no web page can
drive the server through the operator's browser. --cors-origin lets one
named origin's pages call it, with CORS headers.

POST /v1/chat/completions (and /v1/workspaces/{ws}/chat/completions) is an
OpenAI-compatible gateway: point an agent's base URL at http://ADDR/v1 and
its requests get the workspace's prompt, memory, skills and runtime context,
then go on to the upstream in loom.yaml's llm: section (package gateway).

The API is described at GET /v1/openapi.json; Prometheus metrics are at
GET /metrics.

--store postgres keeps every workspace's memories, sessions and memory files
(MEMORY.md, HISTORY.md) in PostgreSQL, so several replicas behind a load
balancer serve the same state: a turn holds its session's lock across
replicas, and a memory written on one replica is in the next prompt rendered
on any other. The DSN is read from the variable --dsn-env names (LOOM_PG_DSN
by default) and is never logged. Without --store, each workspace's loom.yaml
decides (memory: {store: postgres, dsn_env: LOOM_PG_DSN}); SQLite and files
in the workspace folder are the default. While PostgreSQL is out of reach,
requests that need it get 503 (code store_unavailable, Retry-After) and the
pool reconnects by itself.

SIGTERM or Ctrl-C stops taking requests, lets running ones
finish and drains queued work, within --drain-timeout.

Unless GOGC or GOMEMLIMIT is set, the server collects garbage less often
than Go's default: its heap may grow by up to 64 MiB beyond what is live (at
most 4 times the live heap, never less than Go's default), which cuts the
collector's CPU by about three quarters at the usual heap of a few MiB.`,
		Example: `  loom serve -w ./agent
  loom serve --example assistant --addr 127.0.0.1:7411
  loom serve --root ./workspaces --addr 0.0.0.0:7411 --token-env LOOM_TOKENS --log-format json
  LOOM_PG_DSN=postgres://loom@db/loom loom serve -w ./agent --store postgres
  curl -s localhost:7411/v1/workspaces/default/render -H 'Content-Type: application/json' -d '{"channel":"slack"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("workspace") && opts.Root != "" {
				return cmdutil.FlagErrorf("-w and --root cannot be used together")
			}
			if opts.Root != "" {
				opts.Dir = ""
			}
			switch opts.LogFormat {
			case "text", "json":
			default:
				return cmdutil.FlagErrorf("--log-format must be text or json")
			}
			if !cmd.Flags().Changed("store") {
				opts.Store = strings.TrimSpace(os.Getenv("LOOM_MEMORY_STORE")) // as loom memory reads it
			}
			switch opts.Store {
			case "", server.StoreSQLite, server.StorePostgres:
			default:
				return cmdutil.FlagErrorf("--store (or LOOM_MEMORY_STORE) must be sqlite or postgres")
			}
			if cmd.Flags().Changed("dsn-env") && opts.Store != server.StorePostgres {
				return cmdutil.FlagErrorf("--dsn-env needs --store postgres")
			}
			if opts.Store == server.StorePostgres && !validEnvName(opts.DSNEnv) {
				return cmdutil.FlagErrorf("--dsn-env %q is not a variable name", opts.DSNEnv)
			}
			if _, err := parseLevel(opts.LogLevel); err != nil {
				return cmdutil.FlagErrorf("--log-level: %v", err)
			}
			if runF != nil {
				return runF(opts)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return Run(ctx, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Dir, "workspace", "w", ".", "serve this workspace folder as \"default\"")
	shared.AddExampleFlag(cmd, &opts.Dir, shared.ExampleLive)
	fl.StringVar(&opts.Root, "root", "", "serve every sub-folder of this folder as a workspace")
	fl.StringVar(&opts.Addr, "addr", server.DefaultAddr, "address to listen on")
	fl.StringVar(&opts.TokenEnv, "token-env", "", "variable holding the accepted bearer tokens")
	fl.StringVar(&opts.LogFormat, "log-format", "text", "log format: text or json")
	fl.StringVar(&opts.LogLevel, "log-level", "info", "least severe level logged: debug, info, warn or error")
	fl.Int64Var(&opts.MaxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body")
	fl.DurationVar(&opts.DrainTimeout, "drain-timeout", server.DefaultDrainTimeout, "longest wait for running requests and queued work at shutdown")
	fl.BoolVar(&opts.NoWatch, "no-watch", false, "do not watch workspaces (every render checks the disk)")
	fl.StringVar(&opts.Store, "store", "", "where memories and sessions are kept: sqlite or postgres (default: $LOOM_MEMORY_STORE, else each loom.yaml's memory.store, else sqlite)")
	fl.StringVar(&opts.DSNEnv, "dsn-env", config.DefaultDSNEnv, "variable holding the PostgreSQL DSN, with --store postgres")
	fl.StringSliceVar(&opts.AllowedHosts, "allowed-hosts", nil, "Host names (or host:port) answered besides loopback ones, comma-separated; * for any")
	fl.StringSliceVar(&opts.CORSOrigins, "cors-origin", nil, "a web origin (https://app.example.com) whose pages may call the server; repeatable")
	return cmd
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// Tokens splits a variable's value into tokens.
func Tokens(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
}

// Run serves until ctx ends.
func Run(ctx context.Context, opts *Options) error {
	level, _ := parseLevel(opts.LogLevel)
	var h slog.Handler
	var w io.Writer = opts.IO.ErrOut
	if opts.LogFormat == "json" {
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	} else {
		h = slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(h)
	var tokens []string
	if opts.TokenEnv != "" {
		tokens = Tokens(os.Getenv(opts.TokenEnv))
		if len(tokens) == 0 {
			return cmdutil.FlagErrorf("--token-env %s: the variable is empty or unset", opts.TokenEnv)
		}
	}
	if err := server.CheckAddr(opts.Addr, len(tokens) > 0); err != nil {
		return cmdutil.FlagErrorf("%v", err)
	}
	if opts.Store == server.StorePostgres && strings.TrimSpace(os.Getenv(opts.DSNEnv)) == "" {
		return cmdutil.FlagErrorf("--store postgres: %s is empty or unset; put the PostgreSQL DSN there (or name another variable with --dsn-env)", opts.DSNEnv)
	}
	s, err := server.New(server.Options{
		Dir: opts.Dir, Root: opts.Root, Tokens: tokens, Logger: log,
		MaxBodyBytes: opts.MaxBodyBytes, DrainTimeout: opts.DrainTimeout, NoWatch: opts.NoWatch,
		Store: opts.Store, DSNEnv: opts.DSNEnv, AllowedHosts: opts.AllowedHosts, CORSOrigins: opts.CORSOrigins,
	})
	if err != nil {
		return err
	}
	gateway.Mount(s, gateway.Options{})
	for _, m := range append(append([]func(*server.Server) error(nil), Mounts...), opts.Mounts...) {
		if err := m(s); err != nil {
			s.Close()
			return err
		}
	}
	server.TuneGC(ctx) // a small heap collected less often; see server/gc.go
	return s.ListenAndServe(ctx, opts.Addr, func(a net.Addr) {
		log.Info("serving", "addr", a.String(), "workspaces", describe(opts), "store", storeName(opts))
		fmt.Fprintf(opts.IO.ErrOut, "loom: serving on http://%s\n", a)
		if opts.Started != nil {
			opts.Started(a)
		}
	})
}

// storeName says where state is kept, naming the DSN's variable, never
// its value.
func storeName(o *Options) string {
	if o.Store == server.StorePostgres {
		return "postgres (DSN from $" + o.DSNEnv + ")"
	}
	if o.Store == "" {
		return "per loom.yaml"
	}
	return o.Store
}

func describe(o *Options) string {
	if o.Root != "" {
		return "root " + o.Root
	}
	return "default=" + o.Dir
}
