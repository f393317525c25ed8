package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/session"
)

// Store kinds for [Options.Store].
const (
	StoreSQLite   = config.StoreSQLite
	StorePostgres = config.StorePostgres
)

// CodeStoreUnavailable is the problem code of a request that needed the
// shared store (PostgreSQL) while it could not be reached: a 503 with
// Retry-After, to be retried.
const CodeStoreUnavailable = "store_unavailable"

// pgDBs are the PostgreSQL connections of one server, one per DSN
// variable, opened on first use and shared by every workspace.
type pgDBs struct {
	getenv func(string) string

	mu  sync.Mutex
	dbs map[string]*pgstore.DB
}

// open returns the DB whose DSN the variable env holds. The DSN is never
// put in an error or a log line.
func (p *pgDBs) open(ctx context.Context, env string) (*pgstore.DB, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if db := p.dbs[env]; db != nil {
		return db, nil
	}
	dsn := strings.TrimSpace(p.getenv(env))
	if dsn == "" {
		return nil, fmt.Errorf("the PostgreSQL store needs a DSN in %s, which is empty or unset", env)
	}
	db, err := pgstore.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if p.dbs == nil {
		p.dbs = map[string]*pgstore.DB{}
	}
	p.dbs[env] = db
	return db, nil
}

func (p *pgDBs) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for env, db := range p.dbs {
		errs = append(errs, db.Close())
		delete(p.dbs, env)
	}
	return errors.Join(errs...)
}

// backend is where one workspace keeps its memories and sessions.
type backend struct {
	kind string       // StoreSQLite or StorePostgres
	db   *pgstore.DB  // with StorePostgres
	key  string       // the workspace's name in the database
	mem  memory.Store // opened on first use
	// sessions is the PostgreSQL session store; nil means session files.
	sessions *session.PGStore
}

// pgKey is the name a workspace's rows are kept under: the folder's path,
// or LOOM_PG_WORKSPACE (plus the workspace's name when serving a root) so
// that replicas mounting the folders at different paths agree.
func (wss *workspaces) pgKey(w *Workspace) string {
	if wss.root != "" {
		if v := os.Getenv("LOOM_PG_WORKSPACE"); v != "" {
			return v + "/" + w.Name
		}
	}
	return pgstore.WorkspaceKey(w.Root())
}

// backend decides, once, where the workspace keeps its state: the
// operator's --store, else loom.yaml's memory.store. A failure (a broken
// loom.yaml, PostgreSQL out of reach) is not remembered: the next request
// tries again.
func (w *Workspace) backend(ctx context.Context) (*backend, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.be != nil {
		return w.be, nil
	}
	kind, env := w.wss.store, w.wss.dsnEnv
	cfg, err := config.Load(w.Door)
	if err != nil {
		return nil, Errorf(http.StatusUnprocessableEntity, "config_invalid", "%v", err)
	}
	if kind == "" {
		kind, env = cfg.Memory.StoreKind(), cfg.Memory.DSNVar()
	}
	be := &backend{kind: kind}
	if kind == StorePostgres {
		db, err := w.wss.pg.open(ctx, env)
		if err != nil {
			return nil, storeProblem(err)
		}
		be.db, be.key = db, w.wss.pgKey(w)
		be.sessions = session.NewPGStore(db, be.key)
		mem := db.Memory(be.key, pgstore.WithCategories(memory.CategoriesOf(cfg)), pgstore.WithCache())
		be.mem = mem
		w.Builder.SetMemorySource(mem)
	}
	w.be = be
	return be, nil
}

// prepare makes sure the workspace's store is chosen before any handler
// runs, so that every route (mounted front ends' too) renders with the
// right memories. Only an unreachable store stops the request (503); a
// broken loom.yaml is left for the handler to report.
func (w *Workspace) prepare(ctx context.Context) error {
	w.mu.Lock()
	ready := w.be != nil
	w.mu.Unlock()
	if ready {
		return nil
	}
	if _, err := w.backend(ctx); err != nil {
		if p, ok := err.(*Problem); ok && p.Status == http.StatusServiceUnavailable {
			return p
		}
	}
	return nil
}

// storeProblem makes a store that could not be reached a 503 problem and
// a missing DSN a 503 naming the variable; other errors pass unchanged.
func storeProblem(err error) error {
	var p *Problem
	switch {
	case err == nil || errors.As(err, &p):
		return err
	case errors.Is(err, memory.ErrUnavailable):
		return Errorf(http.StatusServiceUnavailable, CodeStoreUnavailable, "the memory and session store is unavailable; retry shortly")
	case strings.Contains(err.Error(), "needs a DSN in"):
		return Errorf(http.StatusServiceUnavailable, "store_not_configured", "%v", err)
	}
	return err
}

// SessionStore returns where the workspace's sessions are kept: the
// shared PostgreSQL store when the workspace uses it (Close leaves it
// open), else a file store under .loom/sessions/. Front ends mounted on
// the server (the gateway) save their turns through it.
func (w *Workspace) SessionStore(ctx context.Context) (session.Store, error) {
	be, err := w.backend(ctx)
	if err != nil {
		return nil, err
	}
	if be.sessions != nil {
		return be.sessions, nil
	}
	// One store for the workspace's life: it remembers that its folder
	// is made, where a new one walked the door to make it on every save.
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.files == nil {
		w.files = session.NewWorkspaceFileStore(w.Door, session.FileOptions{})
	}
	return w.files, nil
}

// StoreKind says where the workspace keeps its state: "sqlite" or
// "postgres".
func (w *Workspace) StoreKind(ctx context.Context) (string, error) {
	be, err := w.backend(ctx)
	if err != nil {
		return "", err
	}
	return be.kind, nil
}

// SharedMemory returns the workspace's memory store when it is shared by
// replicas (PostgreSQL's), nil when memories are in the workspace's own
// SQLite database. Front ends mounted on the server (MCP, the inspector)
// use it instead of opening the database, so every route of a workspace
// reads and writes one store; it also serves as a prompt.MemorySource.
// Callers must not close it.
func (w *Workspace) SharedMemory(ctx context.Context) (memory.Store, error) {
	be, err := w.backend(ctx)
	if err != nil {
		return nil, err
	}
	if be.kind != StorePostgres {
		return nil, nil
	}
	return be.mem, nil
}

// Ready chooses the workspace's store before a front end mounted on the
// server handles a request (HandleWorkspace does it for its routes): an
// unreachable store is a 503 problem with code store_unavailable.
func (w *Workspace) Ready(ctx context.Context) error { return w.prepare(ctx) }
