package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// DefaultWorkspace is the name of the one workspace served with Options.Dir.
const DefaultWorkspace = "default"

// Workspace is one served workspace: its door, watched, and the one prompt
// builder every request on it shares. Mounted handlers may use both; they
// are safe for concurrent use.
type Workspace struct {
	Name    string
	Door    *workspace.Workspace
	Builder *prompt.Builder

	mu        sync.Mutex
	rendered  map[*prompt.Result]*encoded // encoded bodies of the builder's latest results
	reports   map[*prompt.Result][]byte   // their reports' JSON, for POST .../messages
	locks     map[string]*sessionLock     // one lock per session id
	be        *backend                    // where its state is kept, decided on first use
	wss       *workspaces
	engine    *Engine     // built on first turn
	skills    *skills.Set // the last set loaded, at skillsGen
	skillsGen uint64
	files     *session.FileStore // sessions in the folder, made on first use
	log       *slog.Logger
}

// encoded is a render result as sent: its body and its ETag.
type encoded struct {
	body []byte
	etag string
}

// Root returns the workspace's folder.
func (w *Workspace) Root() string { return w.Door.Root() }

type workspaces struct {
	dir, root string
	watch     bool
	log       *slog.Logger
	// store and dsnEnv are the operator's choice (Options.Store, DSNEnv);
	// pg holds the PostgreSQL connections.
	store, dsnEnv string
	pg            *pgDBs

	mu   sync.Mutex
	open map[string]*Workspace
}

func newWorkspaces(dir, root string, watch bool, log *slog.Logger, pg *pgDBs, store, dsnEnv string) (*workspaces, error) {
	wss := &workspaces{watch: watch, log: log, open: map[string]*Workspace{}, pg: pg, store: store, dsnEnv: dsnEnv}
	var err error
	if dir != "" {
		if wss.dir, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
		if _, err := wss.get(DefaultWorkspace); err != nil {
			if p, ok := err.(*Problem); ok {
				return nil, errors.New(p.Detail)
			}
			return nil, err
		}
		return wss, nil
	}
	if wss.root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	st, err := os.Stat(wss.root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, errors.New(root + ": not a folder")
	}
	return wss, nil
}

// validName reports whether name is a plain folder name: no separator, not
// "." or "..", not hidden, not empty, bounded.
func validName(name string) bool {
	if name == "" || len(name) > 255 || name[0] == '.' {
		return false
	}
	return !strings.ContainsAny(name, "/\\\x00")
}

func (wss *workspaces) get(name string) (*Workspace, error) {
	wss.mu.Lock()
	defer wss.mu.Unlock()
	if w, ok := wss.open[name]; ok {
		return w, nil
	}
	notFound := Errorf(http.StatusNotFound, CodeWorkspaceUnknown, "no workspace named %q", name)
	var dir string
	switch {
	case wss.dir != "":
		if name != DefaultWorkspace {
			return nil, notFound
		}
		dir = wss.dir
	case validName(name):
		dir = filepath.Join(wss.root, name)
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() { // a symbolic link is not a plain folder
			return nil, notFound
		}
	default:
		return nil, notFound
	}
	door, err := workspace.Open(dir)
	if err != nil {
		if wss.dir != "" {
			return nil, &Problem{Status: http.StatusNotFound, Code: CodeWorkspaceUnknown, Detail: err.Error()}
		}
		return nil, notFound
	}
	if wss.watch {
		if err := door.Watch(); err != nil {
			// Unwatched, the door checks the disk on every read: slower,
			// still correct.
			_ = err
		}
	}
	w := &Workspace{Name: name, Door: door, Builder: prompt.New(door), log: wss.log.With("workspace", name),
		rendered: map[*prompt.Result]*encoded{}, locks: map[string]*sessionLock{}, wss: wss}
	wss.open[name] = w
	return w, nil
}

// list returns the open workspaces.
func (wss *workspaces) list() []*Workspace {
	wss.mu.Lock()
	defer wss.mu.Unlock()
	out := make([]*Workspace, 0, len(wss.open))
	for _, w := range wss.open {
		out = append(out, w)
	}
	return out
}

// drain closes every workspace's sessions and extraction queue within ctx.
func (wss *workspaces) drain(ctx context.Context) error {
	var errs []error
	for _, w := range wss.list() {
		w.mu.Lock()
		e := w.engine
		w.mu.Unlock()
		if e != nil {
			errs = append(errs, e.close(ctx))
		}
	}
	return errors.Join(errs...)
}

func (wss *workspaces) close() error {
	wss.mu.Lock()
	defer wss.mu.Unlock()
	var errs []error
	for name, w := range wss.open {
		errs = append(errs, w.Builder.Close(), w.Door.Close())
		if w.be != nil && w.be.mem != nil {
			errs = append(errs, w.be.mem.Close())
		}
		delete(wss.open, name)
	}
	errs = append(errs, wss.pg.close())
	return errors.Join(errs...)
}

// sessionLock serialises the requests on one session.
type sessionLock struct {
	ch   chan struct{}
	refs int
}

// LockSession waits until no other request holds session id on this
// workspace and takes it; the returned func releases it. Requests on one
// session run one after the other; on different sessions, in parallel.
func (w *Workspace) LockSession(r *http.Request, id string) (unlock func(), err error) {
	w.mu.Lock()
	l := w.locks[id]
	if l == nil {
		l = &sessionLock{ch: make(chan struct{}, 1)}
		w.locks[id] = l
	}
	l.refs++
	w.mu.Unlock()
	release := func() {
		w.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(w.locks, id)
		}
		w.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-r.Context().Done():
		release()
		return nil, r.Context().Err()
	}
}
