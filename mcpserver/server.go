package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/buildinfo"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// DefaultPoll is how often a server looks for workspace changes besides the
// change feed, unless [Options.Poll] says otherwise. While the workspace's
// door is watching, a look that finds nothing costs one atomic load.
const DefaultPoll = time.Second

// DefaultDebounce is how long after the last event of a burst the server
// refreshes, unless [Options.Debounce] says otherwise.
const DefaultDebounce = 100 * time.Millisecond

// Options configure a [Server]. The zero value serves the workspace-wide
// memory scope with the clock's date.
type Options struct {
	// Name and Version are what the server tells clients it is.
	Name, Version string
	// User is the memory scope of this server: the user whose memories the
	// prompt selects and the tools read and write. "" is the workspace as a
	// whole, and then the tools may name any user.
	User string
	// Now fixes the clock of every render (for tests); zero means the clock.
	Now time.Time
	// Changes are picked up from the workspace's change feed, Debounce
	// after the last event of a burst (0 means DefaultDebounce). Poll is how
	// often to look besides, for what the feed cannot see; 0 means
	// DefaultPoll. A negative Poll turns both off (call [Server.Refresh]
	// instead).
	Debounce time.Duration
	Poll     time.Duration
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Store, when set, is the memory store the tools use instead of the
	// workspace's memory database (loom serve --store postgres passes its
	// shared one); the server does not close it. A store that is also a
	// prompt.MemorySource feeds the rendered prompt too.
	Store memory.Store
}

// Server is one workspace served over MCP. It is safe for concurrent use,
// and one Server serves any number of sessions at once.
type Server struct {
	ws   *workspace.Workspace
	bp   atomic.Pointer[prompt.Builder]
	mcp  *mcp.Server
	opts Options
	log  *slog.Logger

	syncMu   sync.Mutex             // one sync at a time
	prompts  map[string]string      // prompt name → fingerprint
	res      map[string]string      // resource URI → fingerprint
	lastGen  uint64                 // workspace generation at the last sync
	synced   bool                   // a sync has run
	notified func(kind, uri string) // test hook: a notification was sent

	setMu  sync.Mutex
	set    *skills.Set
	setGen uint64
	setAt  time.Time

	storeMu sync.Mutex
	store   memory.Store // opened by the server; nil with Options.Store
	lists   []*listCache

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New returns a server for ws. It lists what the workspace holds at once,
// and starts looking for changes unless opts.Poll is negative; call Close to
// stop. New makes the workspace's door watch its folders, so that looking
// for changes costs nothing while nothing changes.
func New(ws *workspace.Workspace, opts Options) (*Server, error) {
	if ws == nil {
		return nil, errors.New("mcpserver: no workspace")
	}
	if opts.Name == "" {
		opts.Name = "loom"
	}
	if opts.Version == "" {
		opts.Version = buildinfo.Version
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		ws:      ws,
		opts:    opts,
		log:     logger,
		prompts: map[string]string{},
		res:     map[string]string{},
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.bp.Store(prompt.New(ws))
	if src, ok := opts.Store.(prompt.MemorySource); ok {
		s.b().SetMemorySource(src)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: "loom workspace", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "This server is a loom agent workspace: its skills are prompts, its rendered system prompt and files are resources, and its memory is a set of tools.",
		Logger:       logger,
		// Subscriptions are kept by the SDK; these only accept them.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities: &mcp.ServerCapabilities{
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
		},
	})
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
		s.opts.Debounce = DefaultDebounce
	}
	if ws.Root() != "" {
		if err := ws.Watch(); err != nil {
			logger.Warn("workspace watch failed; changes are found by reading", "err", err)
		}
	}
	s.addSystemPrompt()
	s.addTemplates()
	s.addTools()
	if err := s.Refresh(context.Background()); err != nil {
		s.b().Close()
		return nil, err
	}
	if opts.Poll >= 0 {
		go s.watch()
	} else {
		close(s.done)
	}
	return s, nil
}

// b is the current prompt builder.
func (s *Server) b() *prompt.Builder { return s.bp.Load() }

// memoryChanged tells the builder the server wrote to the memory store: a
// watching builder reuses its last render while no workspace file changed,
// and the memory database is not a workspace file it watches.
func (s *Server) memoryChanged() { s.b().Invalidate() }

// setFresh bounds how long a loaded skill set is reused while the watched
// workspace is unchanged, so that availability (a program installed on PATH)
// is looked at again soon, as the prompt builder does.
const setFresh = 2 * time.Second

// skills returns the workspace's skills. While the door watches and nothing
// changed, the last set is reused for up to setFresh without loading.
func (s *Server) skills() (*skills.Set, error) {
	b := s.b()
	s.setMu.Lock()
	if s.set != nil && s.ws.Watching() && s.setGen == s.ws.Generation() && time.Since(s.setAt) < setFresh {
		set := s.set
		s.setMu.Unlock()
		return set, nil
	}
	s.setMu.Unlock()
	gen := s.ws.Generation()
	set, err := b.Skills()
	if err != nil {
		return nil, err
	}
	s.setMu.Lock()
	s.set, s.setGen, s.setAt = set, gen, time.Now()
	s.setMu.Unlock()
	return set, nil
}

// MCP returns the SDK server, for a caller that connects its own transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Workspace returns the workspace being served.
func (s *Server) Workspace() *workspace.Workspace { return s.ws }

// Run serves one transport until the client goes away or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// Handler is the streamable HTTP transport for this workspace: mount it
// where clients should connect (loom serve uses /v1/workspaces/{ws}/mcp).
// Authentication is the mounting server's business.
func (s *Server) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
}

// Close stops looking for changes and closes the memory store. Sessions
// still open are not closed; their transports end them.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.storeMu.Lock()
		if s.store != nil {
			err = s.store.Close()
			s.store = nil
		}
		s.storeMu.Unlock()
		err = errors.Join(err, s.b().Close())
	})
	return err
}

// watch refreshes on every change the workspace's feed reports, and on a
// timer as a safety net for what the feed cannot see (a file reached through
// a symlink that leaves the workspace, an extra skills folder).
func (s *Server) watch() {
	defer close(s.done)
	every := s.opts.Poll
	if every == 0 {
		every = DefaultPoll
	}
	var feed <-chan workspace.Change
	if s.ws.Root() != "" {
		ch, cancel, err := s.ws.Subscribe(s.opts.Debounce)
		if err != nil {
			s.log.Warn("workspace change feed unavailable; polling", "err", err)
		} else {
			feed = ch
			defer cancel()
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case c, ok := <-feed:
			if !ok {
				feed = nil
				continue
			}
			if c.Err != nil {
				s.log.Warn("workspace watcher failed; polling", "err", c.Err)
			}
		case <-t.C:
		}
		if err := s.Refresh(context.Background()); err != nil {
			s.log.Warn("refresh failed", "err", err)
		}
	}
}

// renderOptions are the options of the default render (loom://prompt, the
// system prompt without arguments).
func (s *Server) renderOptions() prompt.Options {
	return prompt.Options{User: s.opts.User, Now: s.opts.Now}
}

// memoryLocation is the memory database of the workspace, as
// config.MemoryStoreLocation resolves it, and its categories.
func (s *Server) memoryLocation() (path string, cats []memory.Category, err error) {
	root := s.ws.Root()
	if root == "" {
		return "", nil, errors.New("this workspace is read-only: it has no folder on disk")
	}
	cfg, err := config.Load(s.ws)
	if err != nil {
		return "", nil, err
	}
	cats = memory.CategoriesOf(cfg)
	path, err = config.MemoryStoreLocation(root, cfg)
	return path, cats, err
}

func workspaceConfig(s *Server) (*config.Config, error) { return config.Load(s.ws) }
