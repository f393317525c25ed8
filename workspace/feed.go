package workspace

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// The change feed. The workspace's watcher ([Workspace.Watch]) is the only
// file watcher in loom: the skills watcher, the prompt builder and `loom
// watch` subscribe to it instead of watching files themselves.
//
// What the feed reports follows from what was read: the watcher watches the
// folders the door read from, and an event reaches subscribers when it
// touches a name some read looked up (a file loaded, a folder tested, a
// path walked through), the listing of a folder that was listed, a watched
// folder itself, or anything in a folder given to [Workspace.Follow]. So a
// subscriber that has rendered the prompt once hears about an edit to any
// file the prompt read, in any folder (agent/prompts/, agent/dialects/,
// databases/, skills/, memory/, the root), and about a file appearing where
// the render looked for one; it does not hear about an editor's swap file
// nobody looked for. Answers that no watch can cover (a symlink leaving the
// workspace) are not reported; see [Workspace.Watching].
//
// [Workspace.Generation] is the same feed read by polling: the prompt
// builder keeps its last render while Generation has not moved, and the
// same watcher events move it.

// Change is one settled burst of events from the feed.
type Change struct {
	// Paths are the absolute paths the events named, sorted, without
	// duplicates.
	Paths []string
	// Err is set when the watcher failed; the door then checks the disk on
	// every read, and no more changes are reported.
	Err error
}

// DefaultDebounce is how long the feed waits after the last event of a
// burst before it reports the burst: editors write a file in several
// steps, and one save should cost one re-render.
const DefaultDebounce = 300 * time.Millisecond

// subscriber is one Subscribe call.
type subscriber struct {
	debounce time.Duration
	kick     chan struct{} // capacity 1: events are pending
	done     chan struct{} // closed by cancel
	exited   chan struct{} // closed when run returns
	out      chan Change
	stopOnce sync.Once

	// Under Workspace.mu.
	pending map[string]bool
	err     error
}

// Subscribe starts watching (see [Workspace.Watch]) if need be and returns
// a channel of changes, one per burst of relevant events that has been quiet
// for debounce (0 means [DefaultDebounce]; negative reports at once), and a
// func that ends the subscription and closes the channel. If the reader falls
// behind, an undelivered Change is merged into the next one, so nothing is
// lost and the reader never blocks the watcher. [Workspace.Close] ends every
// subscription.
func (w *Workspace) Subscribe(debounce time.Duration) (<-chan Change, func(), error) {
	if w.fsys != nil {
		return nil, nil, errors.New("workspace: a built-in workspace never changes; there is nothing to subscribe to")
	}
	if err := w.Watch(); err != nil {
		return nil, nil, err
	}
	if debounce == 0 {
		debounce = DefaultDebounce
	}
	s := &subscriber{
		debounce: max(debounce, 0),
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		exited:   make(chan struct{}),
		out:      make(chan Change),
		pending:  map[string]bool{},
	}
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[*subscriber]bool{}
	}
	w.subs[s] = true
	w.mu.Unlock()
	go w.serve(s)
	cancel := func() {
		w.mu.Lock()
		delete(w.subs, s)
		w.mu.Unlock()
		s.stop()
	}
	return s.out, cancel, nil
}

// Follow makes every event in the folder rel (not its subfolders) reach the
// change feed, whether or not anything read the file it names: for a caller
// that cares about a whole folder. rel is watched from then on.
func (w *Workspace) Follow(rel string) error {
	if err := w.Watch(); err != nil {
		return err
	}
	d := w.walk(cleanRel(rel), true)
	if d == nil || len(d.on) == 0 {
		return errors.New("workspace: " + QuotePath(rel) + ": cannot be watched")
	}
	w.mu.Lock()
	d.on[len(d.on)-1].f.all = true
	w.mu.Unlock()
	return nil
}

// serve debounces one subscriber's events and delivers them.
func (w *Workspace) serve(s *subscriber) {
	defer close(s.exited)
	defer close(s.out)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var fire <-chan time.Time
	var ready *Change // taken from pending, not yet delivered
	for {
		var out chan Change
		var c Change
		if ready != nil {
			out, c = s.out, *ready
		}
		select {
		case <-s.done:
			timer.Stop()
			return
		case <-s.kick:
			timer.Reset(s.debounce)
			fire = timer.C
		case <-fire:
			fire = nil
			w.mu.Lock()
			paths := make([]string, 0, len(s.pending))
			for p := range s.pending {
				paths = append(paths, p)
			}
			clear(s.pending)
			err := s.err
			s.err = nil
			w.mu.Unlock()
			if len(paths) == 0 && err == nil {
				continue
			}
			if ready != nil {
				paths = append(paths, ready.Paths...)
				err = errors.Join(ready.Err, err)
			}
			slices.Sort(paths)
			paths = slices.Compact(paths)
			ready = &Change{Paths: paths, Err: err}
		case out <- c:
			ready = nil
		}
	}
}

// notify queues name for every subscriber. Called with w.mu held.
func (w *Workspace) notify(name string, err error) {
	for s := range w.subs {
		if name != "" {
			s.pending[name] = true
		}
		if err != nil {
			s.err = err
		}
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// endSubscriptions cancels every subscription (on Close).
func (w *Workspace) endSubscriptions() {
	w.mu.Lock()
	subs := w.subs
	w.subs = nil
	w.mu.Unlock()
	for s := range subs {
		s.stop()
	}
}

// stop ends s and waits for its goroutine.
func (s *subscriber) stop() {
	s.stopOnce.Do(func() { close(s.done) })
	<-s.exited
}

// relevantEvent reports whether an event on name, with listing true when a
// name came or went, touches anything a read depended on. Called with w.mu
// held.
func (w *Workspace) relevantEvent(name string, listing bool) bool {
	if _, ok := w.dirs[name]; ok {
		return true // a watched folder itself
	}
	f := w.dirs[filepath.Dir(name)]
	if f == nil {
		return false
	}
	return f.all || f.wanted[filepath.Base(name)] || (listing && f.listed)
}
