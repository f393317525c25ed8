package skills

import (
	"errors"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/loomctx/loom/workspace"
)

// DefaultDebounce is how long a [Watcher] waits after the last change
// before it reloads: editors write a file in several steps, and a burst of
// saves should cost one reload.
const DefaultDebounce = workspace.DefaultDebounce

// WatchOptions configures [Watch].
type WatchOptions struct {
	// Debounce is the quiet time after the last event before a reload; 0
	// means DefaultDebounce and a negative value reloads at once.
	Debounce time.Duration
	// Also names further workspace folders (slash-separated, relative; "."
	// is the root) whose direct files count as changes, for a caller that
	// renders more than skills. They are not watched recursively, and must
	// exist when Watch is called.
	Also []string
}

// Change is one reload after a burst of file events.
type Change struct {
	// Set is the freshly loaded skills; nil when Err is set.
	Set *Set
	// Paths are the files and folders the events named, absolute and
	// sorted.
	Paths []string
	// Err is an error from the file watcher itself.
	Err error
}

// Watcher reloads a [Loader]'s skills when its skill folders change. It
// owns no file watcher: it subscribes to the change feed of the workspace
// ([workspace.Workspace.Subscribe]) and of each skills folder outside it,
// which report changes to whatever the loader read, so a skills folder or
// a skill created after the start is picked up. Closing the Watcher ends
// its subscriptions; the workspaces go on watching until closed.
type Watcher struct {
	l    *Loader
	also map[string]bool // absolute Also folders

	cancels []func()
	out     chan Change
	done    chan struct{}
	exited  chan struct{}
	once    sync.Once
}

// Watch starts watching l's skill folders. The caller reads [Watcher.Changes]
// and must call [Watcher.Close].
func Watch(l *Loader, opts WatchOptions) (*Watcher, error) {
	if l.ws.Root() == "" {
		return nil, errors.New("skills: cannot watch a workspace that is not a folder on disk")
	}
	w := &Watcher{
		l:      l,
		also:   map[string]bool{},
		out:    make(chan Change, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	merged := make(chan workspace.Change)
	subscribe := func(door *workspace.Workspace) error {
		feed, cancel, err := door.Subscribe(opts.Debounce)
		if err != nil {
			return err
		}
		w.cancels = append(w.cancels, cancel)
		go func() {
			for c := range feed {
				select {
				case merged <- c:
				case <-w.done:
					return
				}
			}
		}()
		return nil
	}
	if err := subscribe(l.ws); err != nil {
		return nil, err
	}
	for _, a := range opts.Also {
		if l.ws.IsDir(a) {
			if err := l.ws.Follow(a); err != nil {
				w.stop()
				return nil, err
			}
		}
		w.also[l.ws.Abs(a)] = true
	}
	// A first load: the feed reports changes to what was read.
	l.Load()
	for _, door := range l.externalDoors() {
		if err := subscribe(door); err != nil {
			w.stop()
			return nil, err
		}
	}
	go w.loop(merged)
	return w, nil
}

// Changes delivers one Change per reload. If the reader falls behind, an
// undelivered change is replaced by the newer one, so the reader always
// gets the latest state. The channel is closed by Close.
func (w *Watcher) Changes() <-chan Change { return w.out }

// Close stops watching and closes the Changes channel.
func (w *Watcher) Close() error {
	w.once.Do(func() {
		w.stop()
		<-w.exited
		close(w.out)
	})
	return nil
}

func (w *Watcher) stop() {
	for _, cancel := range w.cancels {
		cancel()
	}
	select {
	case <-w.done:
	default:
		close(w.done)
	}
}

func (w *Watcher) loop(merged <-chan workspace.Change) {
	defer close(w.exited)
	for {
		select {
		case <-w.done:
			return
		case c := <-merged:
			if c.Err != nil {
				w.deliver(Change{Err: c.Err})
				continue
			}
			roots, above := w.l.watchRoots()
			var paths []string
			for _, p := range c.Paths {
				if w.relevant(p, roots, above) {
					paths = append(paths, p)
				}
			}
			if len(paths) == 0 {
				continue
			}
			sort.Strings(paths)
			w.deliver(Change{Set: w.l.Load(), Paths: paths})
		}
	}
}

// deliver sends c, replacing a change the reader has not taken yet.
func (w *Watcher) deliver(c Change) {
	for {
		select {
		case w.out <- c:
			return
		case <-w.done:
			return
		default:
			select {
			case <-w.out:
			default:
			}
		}
	}
}

// relevant reports whether an event on p can change the skills (or an Also
// folder).
func (w *Watcher) relevant(p string, roots, above map[string]bool) bool {
	if roots[p] || above[p] {
		return true
	}
	dir := filepath.Dir(p)
	if w.also[dir] {
		return true
	}
	for d := dir; ; d = filepath.Dir(d) {
		if roots[d] {
			return true
		}
		if next := filepath.Dir(d); next == d {
			return false
		}
	}
}

// externalDoors are the doors of skills folders outside the workspace.
func (l *Loader) externalDoors() []*workspace.Workspace {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*workspace.Workspace
	for _, d := range l.extDoor {
		out = append(out, d)
	}
	return out
}

// watchRoots returns the absolute skill roots on disk and the folders above
// each, up to the workspace root (or to the filesystem root for an extra
// folder outside the workspace).
func (l *Loader) watchRoots() (roots, above map[string]bool) {
	l.mu.Lock()
	var diags workspace.Diagnostics // reported by Load, not here
	rs := l.roots(&diags)
	l.mu.Unlock()
	roots, above = map[string]bool{}, map[string]bool{}
	wsRoot := l.ws.Root()
	for _, r := range rs {
		if r.source == SourceBuiltin {
			continue
		}
		abs := r.door.Abs(r.dir)
		roots[abs] = true
		stop := wsRoot
		if r.external {
			stop = filepath.Dir(abs)
		}
		for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
			above[d] = true
			if d == stop || filepath.Dir(d) == d {
				break
			}
		}
	}
	return roots, above
}
