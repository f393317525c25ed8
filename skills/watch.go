package skills

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/loomctx/loom/workspace"
)

// DefaultDebounce is how long a [Watcher] waits after the last change
// before it reloads: editors write a file in several steps, and a burst of
// saves should cost one reload.
const DefaultDebounce = 300 * time.Millisecond

// WatchOptions configures [Watch].
type WatchOptions struct {
	// Debounce is the quiet time after the last event before a reload; 0
	// means DefaultDebounce and a negative value reloads at once.
	Debounce time.Duration
	// Also names further workspace folders (slash-separated, relative; "."
	// is the root) whose direct files count as changes, for a caller that
	// renders more than skills. They are not watched recursively.
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
// watches each skill root, every skill folder in it, and the folders above
// the roots, so that a skills folder or a skill created after the start is
// picked up. It belongs to one workspace: two Watchers share nothing.
type Watcher struct {
	l        *Loader
	fw       *fsnotify.Watcher
	debounce time.Duration
	also     map[string]bool // absolute Also folders

	mu      sync.Mutex
	watched map[string]bool
	roots   map[string]bool // absolute skill roots
	above   map[string]bool // absolute folders on the way to a root

	out       chan Change
	done      chan struct{}
	exited    chan struct{}
	closeOnce sync.Once
}

// Watch starts watching l's skill folders. The caller reads [Watcher.Changes]
// and must call [Watcher.Close].
func Watch(l *Loader, opts WatchOptions) (*Watcher, error) {
	if l.ws.Root() == "" {
		return nil, errors.New("skills: cannot watch a workspace that is not a folder on disk")
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &Watcher{
		l: l, fw: fw, debounce: opts.Debounce,
		also:    map[string]bool{},
		watched: map[string]bool{},
		out:     make(chan Change, 1),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	if w.debounce == 0 {
		w.debounce = DefaultDebounce
	}
	w.debounce = max(w.debounce, 0)
	for _, a := range opts.Also {
		w.also[l.ws.Abs(a)] = true
	}
	w.sync()
	go w.loop()
	return w, nil
}

// Changes delivers one Change per reload. If the reader falls behind, an
// undelivered change is replaced by the newer one, so the reader always
// gets the latest state. The channel is closed by Close.
func (w *Watcher) Changes() <-chan Change { return w.out }

// Close stops watching and closes the Changes channel.
func (w *Watcher) Close() error {
	var err error
	w.closeOnce.Do(func() {
		close(w.done)
		err = w.fw.Close()
		<-w.exited
		close(w.out)
	})
	return err
}

// Watched returns the folders being watched, sorted; for tests and
// diagnostics.
func (w *Watcher) Watched() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return sortedKeys(w.watched)
}

func (w *Watcher) loop() {
	defer close(w.exited)
	var timer *time.Timer
	var fire <-chan time.Time
	pending := map[string]bool{}
	for {
		select {
		case <-w.done:
			if timer != nil {
				timer.Stop()
			}
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			if !w.relevant(ev.Name) {
				continue
			}
			pending[ev.Name] = true
			w.sync()
			if timer == nil {
				timer = time.NewTimer(w.debounce)
			} else {
				timer.Reset(w.debounce)
			}
			fire = timer.C
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			w.deliver(Change{Err: err})
		case <-fire:
			fire = nil
			set := w.l.Load()
			w.deliver(Change{Set: set, Paths: sortedKeys(pending)})
			clear(pending)
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
func (w *Watcher) relevant(p string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.roots[p] || w.above[p] {
		return true
	}
	dir := filepath.Dir(p)
	if w.also[dir] {
		return true
	}
	for d := dir; ; d = filepath.Dir(d) {
		if w.roots[d] {
			return true
		}
		if next := filepath.Dir(d); next == d {
			return false
		}
	}
}

// sync brings the set of watched folders in line with what is on disk now:
// every existing skill root and its subfolders, the nearest existing folder
// above a root that does not exist yet, and the Also folders.
func (w *Watcher) sync() {
	roots, above := w.l.watchRoots()
	want := map[string]bool{}
	for r := range roots {
		if isDir(r) {
			want[r] = true
			entries, _ := os.ReadDir(r)
			for _, e := range entries {
				if e.IsDir() {
					want[filepath.Join(r, e.Name())] = true
				}
			}
		}
	}
	for a := range above {
		if isDir(a) {
			want[a] = true
		}
	}
	for a := range w.also {
		if isDir(a) {
			want[a] = true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roots, w.above = roots, above
	for d := range want {
		if !w.watched[d] {
			if err := w.fw.Add(d); err == nil {
				w.watched[d] = true
			}
		}
	}
	for d := range w.watched {
		if !want[d] {
			_ = w.fw.Remove(d) // already gone when the folder was deleted
			delete(w.watched, d)
		}
	}
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

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
