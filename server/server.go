package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loomctx/loom/config"
)

// Defaults for [Options].
const (
	DefaultAddr              = "127.0.0.1:7411"
	DefaultMaxBodyBytes      = 32 << 20 // history plus images, as the CLI caps them (20 MiB of media)
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultDrainTimeout      = 10 * time.Second
)

// Options configure a [Server]. Exactly one of Dir and Root is set.
type Options struct {
	// Dir serves one workspace folder, named "default" in routes.
	Dir string
	// Root serves every plain sub-folder of Root as a workspace named
	// after the folder.
	Root string
	// Tokens are the accepted bearer tokens. Empty means no
	// authentication, which ListenAndServe allows on loopback only.
	Tokens []string
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// MaxBodyBytes caps every request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Timeouts; zero means the defaults above.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// DrainTimeout bounds the shutdown: in-flight requests, then drainers.
	DrainTimeout time.Duration
	// NoWatch leaves workspaces unwatched: every render checks the disk.
	NoWatch bool
	// Store is where every workspace keeps its memories, sessions and
	// memory files: StoreSQLite (memory.db and files in the folder) or
	// StorePostgres (shared by every replica on the same database). Empty
	// lets each workspace's loom.yaml decide (memory.store), SQLite unless
	// it says otherwise.
	Store string
	// DSNEnv names the variable holding the PostgreSQL DSN when Store is
	// StorePostgres; default config.DefaultDSNEnv. The DSN itself is never
	// logged nor put in a response.
	DSNEnv string
	// Getenv reads DSN variables; default os.Getenv.
	Getenv func(string) string
	// AllowedHosts are the Host names (or host:port) the server answers to
	// besides loopback ones; "*" is any. Every other Host gets 421, which
	// stops DNS rebinding (see guard.go).
	AllowedHosts []string
	// CORSOrigins are the web origins (https://app.example.com) whose
	// pages may call the server: they get CORS headers and pass the
	// cross-site check. None by default.
	CORSOrigins []string
}

// Server is loom's HTTP server. Build it with [New], mount front ends with
// [Server.Handle] and [Server.HandleWorkspace], then serve with
// [Server.ListenAndServe] or [Server.Serve], or use [Server.Handler] in
// tests.
type Server struct {
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler
	reg     *prometheus.Registry
	metrics *metrics
	wss     *workspaces
	tokens  [][32]byte

	allowedHosts []string
	corsOrigins  []string
	crossOrigin  *http.CrossOriginProtection
	formKey      [32]byte

	mu       sync.Mutex
	drainers []func(context.Context) error
	shaper   ErrorShaper
	ready    bool
}

// New returns a server for the workspace folder or root in opts, with every
// built-in route registered.
func New(opts Options) (*Server, error) {
	if (opts.Dir == "") == (opts.Root == "") {
		return nil, errors.New("server: set exactly one of Dir and Root")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch opts.Store {
	case "", StoreSQLite, StorePostgres:
	default:
		return nil, fmt.Errorf("server: store %q is not sqlite or postgres", opts.Store)
	}
	if opts.Store == StorePostgres && opts.DSNEnv == "" {
		opts.DSNEnv = config.DefaultDSNEnv
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	origins, err := checkOrigins(opts.CORSOrigins)
	if err != nil {
		return nil, err
	}
	cop := http.NewCrossOriginProtection()
	for _, o := range origins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("server: CORS origin %s: %v", o, err)
		}
	}
	pg := &pgDBs{getenv: opts.Getenv}
	if opts.Store == StorePostgres {
		// Connect and migrate now: a replica that cannot reach its
		// database says so at start, not on its first request.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := pg.open(ctx, opts.DSNEnv)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("server: PostgreSQL store: %w", err)
		}
	}
	wss, err := newWorkspaces(opts.Dir, opts.Root, !opts.NoWatch, log, pg, opts.Store, opts.DSNEnv)
	if err != nil {
		pg.close()
		return nil, err
	}
	s := &Server{opts: opts, log: log, mux: http.NewServeMux(), reg: prometheus.NewRegistry(), wss: wss,
		allowedHosts: normalHosts(opts.AllowedHosts), corsOrigins: origins, crossOrigin: cop}
	rand.Read(s.formKey[:])
	for _, t := range opts.Tokens {
		s.tokens = append(s.tokens, hashToken(t))
	}
	s.metrics = newMetrics(s.reg)
	s.reg.MustRegister(newExtractMetrics(wss))
	s.reg.MustRegister(newEmbeddingMetrics(wss))
	s.handler = s.middleware(s.mux)
	s.routes()
	s.ready = true
	return s, nil
}

// Handler returns the server's whole handler: every route behind the
// middleware. Tests serve it with httptest.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the Prometheus registry served at GET /metrics. A front
// end registers its own collectors on it.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Logger returns the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Handle registers h for a ServeMux pattern ("GET /inspect/",
// "POST /v1/things/{id}"). It panics on a pattern already registered, as
// http.ServeMux does.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// HandleFunc is Handle for a function.
func (s *Server) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	s.mux.HandleFunc(pattern, h)
}

// WorkspaceHandler is a handler for a route with a {ws} wildcard.
type WorkspaceHandler func(w http.ResponseWriter, r *http.Request, ws *Workspace)

// HandleWorkspace registers h for a pattern that holds a {ws} wildcard. The
// server resolves the name to an open workspace, or answers 404 without
// calling h.
func (s *Server) HandleWorkspace(pattern string, h WorkspaceHandler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		ws, err := s.wss.get(r.PathValue("ws"))
		if err != nil {
			s.problem(w, r, err)
			return
		}
		if err := ws.prepare(r.Context()); err != nil {
			s.problem(w, r, err)
			return
		}
		h(w, r, ws)
	})
}

// HandleForm is HandleWorkspace for a route that a page the server serves
// posts its forms to: a request without a form token the server made
// (X-Loom-Form-Token, see [Server.FormToken]) gets 403, so another site's
// page cannot submit the form.
func (s *Server) HandleForm(pattern string, h WorkspaceHandler) {
	s.HandleWorkspace(pattern, func(w http.ResponseWriter, r *http.Request, ws *Workspace) {
		if !s.ValidFormToken(r.Header.Get(FormTokenHeader)) {
			WriteProblem(w, r, Errorf(http.StatusForbidden, CodeFormToken, "this form must be sent from the page that holds it (%s missing or not made by this server)", FormTokenHeader))
			return
		}
		h(w, r, ws)
	})
}

// Workspace returns the open workspace with that name ("default" with
// Options.Dir), opening and watching it on first use. An unknown or
// unsafe name gives a 404 *Problem.
func (s *Server) Workspace(name string) (*Workspace, error) { return s.wss.get(name) }

// AddDrainer registers f to run at shutdown, after in-flight requests have
// finished; ctx ends at the drain deadline.
func (s *Server) AddDrainer(f func(ctx context.Context) error) {
	s.mu.Lock()
	s.drainers = append(s.drainers, f)
	s.mu.Unlock()
}

// ListenAndServe listens on addr and serves until ctx ends, then drains (see
// [Server.Serve]). It refuses an address that is not loopback unless tokens
// are configured.
func (s *Server) ListenAndServe(ctx context.Context, addr string, started func(net.Addr)) error {
	if err := CheckAddr(addr, len(s.tokens) > 0); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if started != nil {
		started(ln.Addr())
	}
	return s.Serve(ctx, ln)
}

// CheckAddr returns an error for a listen address that is not loopback when
// no tokens are configured.
func CheckAddr(addr string, haveTokens bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v", addr, err)
	}
	if haveTokens || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--addr %s is not loopback: refusing to serve without bearer tokens (set --token-env)", addr)
}

// Serve serves on ln until ctx ends. It then stops taking requests, lets
// in-flight ones finish, runs the drainers, and closes the workspaces, all
// within Options.DrainTimeout.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.closeAll(context.Background())
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.ready = false
	s.mu.Unlock()
	s.log.Info("shutting down: draining requests", "timeout", s.opts.DrainTimeout)
	dctx, cancel := context.WithTimeout(context.Background(), s.opts.DrainTimeout)
	defer cancel()
	err := srv.Shutdown(dctx)
	if err != nil {
		s.log.Warn("requests still running at the drain deadline", "err", err)
		srv.Close()
	}
	<-errc
	return errors.Join(err, s.closeAll(dctx))
}

// closeAll runs the drainers, then closes the workspaces.
func (s *Server) closeAll(ctx context.Context) error {
	s.mu.Lock()
	ds := append([]func(context.Context) error(nil), s.drainers...)
	s.mu.Unlock()
	var errs []error
	for _, d := range ds {
		if err := d(ctx); err != nil {
			s.log.Warn("drain", "err", err)
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.wss.drain(ctx), s.wss.close())
	return errors.Join(errs...)
}

// Close releases the workspaces without serving; for tests that used
// Handler.
func (s *Server) Close() error { return s.closeAll(context.Background()) }

func (s *Server) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}
