package shared

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// SharedMemory is the PostgreSQL store a workspace keeps its memories in
// when loom.yaml's memory.store (or $LOOM_MEMORY_STORE) says postgres: the
// command then reads and writes what loom serve's replicas do.
type SharedMemory struct {
	DB       *pgstore.DB
	Key      string // the workspace's key in the database
	Memories *pgstore.Memories
}

// Close closes the memories and the connection pool.
func (s *SharedMemory) Close() {
	s.Memories.Close()
	s.DB.Close()
}

// OpenSharedMemory opens the PostgreSQL store when the workspace uses one,
// and returns nil when it keeps its memories in the folder. listen keeps a
// connection that hears other processes' writes (for a command that stays
// up); a one-shot command checks the store's change counter instead.
func OpenSharedMemory(ctx context.Context, ws *workspace.Workspace, cfg *config.Config, listen bool) (*SharedMemory, error) {
	kind := strings.TrimSpace(os.Getenv("LOOM_MEMORY_STORE"))
	if kind == "" {
		kind = cfg.Memory.StoreKind()
	}
	if kind != config.StorePostgres {
		return nil, nil
	}
	env := cfg.Memory.DSNVar()
	dsn := strings.TrimSpace(os.Getenv(env))
	if dsn == "" {
		return nil, fmt.Errorf("memory.store is postgres but %s is empty or unset; put the PostgreSQL DSN there", env)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := []pgstore.Option{pgstore.WithMaxConns(4)}
	if !listen {
		opts = append(opts, pgstore.WithoutListen())
	}
	db, err := pgstore.Open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	key := pgstore.WorkspaceKey(ws.Root())
	mem := db.Memory(key, pgstore.WithCategories(memory.CategoriesOf(cfg)), pgstore.WithCache())
	return &SharedMemory{DB: db, Key: key, Memories: mem}, nil
}

// NewBuilder returns a prompt builder for ws that reads memories from the
// store loom.yaml names, and a func that closes both. A loom.yaml that does
// not load is left for the render to report; the builder then reads the
// folder's store.
func NewBuilder(ctx context.Context, ws *workspace.Workspace) (*prompt.Builder, func(), error) {
	return withMemory(ctx, ws, prompt.New(ws))
}

// NewOneShotBuilder is NewBuilder for a command that renders once and
// exits: its builder keeps nothing for a later render (prompt.NewOneShot).
func NewOneShotBuilder(ctx context.Context, ws *workspace.Workspace) (*prompt.Builder, func(), error) {
	return withMemory(ctx, ws, prompt.NewOneShot(ws))
}

// withMemory points b at the memory store loom.yaml names (see NewBuilder).
func withMemory(ctx context.Context, ws *workspace.Workspace, b *prompt.Builder) (*prompt.Builder, func(), error) {
	cfg, err := config.Load(ws)
	if err != nil || ws.Root() == "" {
		return b, func() { b.Close() }, nil
	}
	sm, err := OpenSharedMemory(ctx, ws, cfg, false)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	if sm == nil {
		return b, func() { b.Close() }, nil
	}
	b.SetMemorySource(sm.Memories)
	return b, func() { b.Close(); sm.Close() }, nil
}
