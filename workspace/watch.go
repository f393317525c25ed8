package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Generation is a counter that rises whenever the workspace is seen to have
// changed through the door:
//
//   - a Load whose answer differs from the last answer for that path: a file
//     that appears (a path never loaded counts as missing), a file whose
//     [FileID] changed, a file that is gone or now refused, a different error;
//   - a ReadDir whose names, entry types or error differ from the last listing
//     of that folder (the first listing counts as a change);
//   - an IsDir or Exists whose answer differs from the last one for that path
//     (the first answer counts as a change), and likewise a LocalIDs;
//   - while watching, any event in a watched folder, and a watcher failure.
//
// So if two calls to Generation around a sequence of reads return the same
// value, and every read in the sequence had been made before, then every read
// returned what it returned before. A caller can keep a result built from
// such reads together with the Generation read before the first of them, and
// reuse it as long as redoing the reads leaves Generation where it was.
//
// Generation is safe to call concurrently with reads.
func (w *Workspace) Generation() uint64 { return w.gen.Load() }

// Writes counts the writes made through the door (WriteFile, AppendFile,
// Remove, ...). A reader that keeps a result under the Generation read
// after its reads checks that Writes did not move during them: a write
// landing between a read and the end of the reads may have left the
// Generation where it was (nothing of its path was noted yet) while the
// read returned the file as it was before.
func (w *Workspace) Writes() uint64 { return w.writes.Load() }

// Watch makes the door trust its caches: while watching, a read that was
// answered before is answered again from memory, with no system call, until
// an event arrives that touches what the answer depended on: a name looked up
// on its path or through its symlinks (for a file, also its contents), the
// listing for ReadDir, or any folder on the way itself (removed, renamed,
// its permissions changed). Watches are added lazily, one per folder the door
// reads from, plus the root. An answer that depends on something a watch cannot
// cover (a symlink that leaves the workspace, a folder whose watch could not
// be added, say because of the inotify limit) is checked on disk every time,
// as without Watch.
//
// Events arrive asynchronously: a change is seen once its event has been
// delivered, typically well under a millisecond after the change. Changes
// that raise no event in the file's folder are not seen while the cache is
// trusted: a write through a hard link in another folder, a write through a
// shared memory mapping, a change on a network file system made by another
// machine. If the watcher reports an error (such as a queue overflow) the
// door stops trusting its caches and checks the disk as without Watch; the
// error is kept for [Workspace.WatchErr].
//
// Calling Watch again while watching does nothing. For a workspace backed by
// an fs.FS, Watch does nothing: its answers are cached for good anyway.
func (w *Workspace) Watch() error {
	if w.fsys != nil {
		return nil
	}
	w.mu.Lock()
	watching := w.watcher != nil
	w.mu.Unlock()
	if watching {
		return nil
	}
	wt, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("workspace %s: watch: %w", QuotePath(w.root), err)
	}
	if err := wt.Add(w.root); err != nil {
		wt.Close()
		return fmt.Errorf("workspace %s: watch: %w", QuotePath(w.root), err)
	}
	w.mu.Lock()
	if w.watcher != nil {
		w.mu.Unlock()
		wt.Close()
		return nil
	}
	done := make(chan struct{})
	w.watcher, w.done = wt, done
	w.dirs = map[string]*folder{w.root: {}}
	w.distrust, w.watchErr = false, nil
	w.uncovered.Store(false)
	w.linked.Store(false)
	w.bumpAll()
	w.mu.Unlock()
	go w.run(wt, done)
	return nil
}

// Close stops watching and ends every subscription to the change feed
// ([Workspace.Subscribe]). Reads go on working, checking the disk each time.
// Close on a workspace that is not watching does nothing.
func (w *Workspace) Close() error {
	w.endSubscriptions()
	w.mu.Lock()
	wt, done := w.watcher, w.done
	w.watcher, w.done = nil, nil
	for _, d := range w.dirs {
		d.epoch++
	}
	w.dirs = nil
	w.mu.Unlock()
	if wt == nil {
		return nil
	}
	err := wt.Close()
	<-done
	return err
}

// WatchErr is the first error the watcher reported since [Workspace.Watch],
// after which the door went back to checking the disk, or nil.
func (w *Workspace) WatchErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watchErr
}

// folder is one watched real folder. Its counters only rise: epoch for
// events on the folder itself (and when its watch ends), which void every
// answer that looked inside it; names for each child that had an event; list
// when a child was created, removed or renamed.
type folder struct {
	epoch uint64
	list  uint64
	names map[string]uint64

	// For the change feed: the names some read depended on, whether some
	// read depended on the listing, and whether Follow asked for all.
	wanted map[string]bool
	listed bool
	all    bool
}

// want notes that a read depends on name (on the listing for "").
func (f *folder) want(name string) {
	switch name {
	case "":
		f.listed = true
	case "/":
	default:
		if f.wanted == nil {
			f.wanted = map[string]bool{}
		}
		f.wanted[name] = true
	}
}

// maxNames bounds folder.names; past it the folder starts afresh with a new
// epoch, so a stream of uniquely named temporary files cannot grow it forever.
const maxNames = 1024

// at returns the counter a dependency on child name (or, for "", on the
// listing) watches.
func (f *folder) at(name string) uint64 {
	if name == "" {
		return f.list
	}
	return f.names[name]
}

// dep is one thing an answer depends on: the child name of folder f (what
// looking it up finds, including, for a file, its contents), or with name ""
// the listing of f. epoch and n are the counters noted before the disk was
// read.
type dep struct {
	f        *folder
	name     string
	epoch, n uint64
}

// deps is what an answer depends on. The answer holds while no counter has
// moved. straight marks the deps of a walk that went down its path one
// name per folder, with no symlink and no "..".
type deps struct {
	on       []dep
	straight bool
}

// fixed marks an answer that holds for good (an fs.FS-backed workspace).
var fixed = &deps{}

type op uint8

const (
	opLoad op = iota
	opReadDir
	opIsDir
	opExists
	opLocal
)

type memoKey struct {
	op  op
	rel string
}

// entry is the last answer to one read. Entries are never changed once
// stored, so a reader may use one after letting go of the lock.
type entry struct {
	file *File         // Load
	list []fs.DirEntry // ReadDir; a private copy
	err  error         // Load, ReadDir
	yes  bool          // IsDir, Exists
	ids  []FileID      // LocalIDs; never changed once stored
	deps *deps         // nil: check the disk before serving
	// at is when the answer was read from the disk (zero: not known), and
	// dir the identity of the folder a ReadDir listed, from a stat made
	// before the listing (zero: not known); see racy.
	at         time.Time
	dir        FileID
	dirChanged time.Time // the folder's status change time, with dir
}

// racyWindow bounds how far a file's modification time may lag behind the
// change that set it. A file system stamps changes from a clock that ticks
// in steps (a jiffy, up to 10 ms, on Linux; two seconds on FAT), so a
// change made in the same step as an earlier read leaves the same time,
// and, when it keeps the size too, the same identity. An answer is
// validated by its stat only once the time it holds is older than the read
// by more than this; until then the file is read again and compared by its
// content, as git treats a "racily clean" entry.
const racyWindow = 2 * time.Second

// racy reports whether an answer read at at, about something last
// modified at mod, could hide a later change with the same stat.
func racy(mod, at time.Time) bool {
	return at.IsZero() || !mod.Before(at.Add(-racyWindow))
}

// cached returns the last answer for k and whether it may be served without
// looking at the disk.
func (w *Workspace) cached(k memoKey) (*entry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.memo[k]
	if e == nil || e.deps == nil {
		return e, false
	}
	if e.deps == fixed {
		return e, true
	}
	if w.watcher == nil || w.distrust {
		return e, false
	}
	if e.deps.stale() {
		return e, false
	}
	return e, true
}

// stale reports whether something the answer depends on changed since
// its deps were taken (w.mu held).
func (d *deps) stale() bool {
	for _, on := range d.on {
		if on.f.epoch != on.epoch || on.f.at(on.name) != on.n {
			return true
		}
	}
	return false
}

// changedDuring moves the generation when an answer about to be noted
// was read while its path changed (a write through the door, or an
// event, after the deps were taken and before now): the answer may be the
// old state, and a render holding it must not outlive the change. A write
// that found nothing of its path noted (forget) does not move the
// generation itself, so without this a read in flight across the write
// would leave a render of the old file cached under an unchanged
// generation (TestConsolidationThroughGateway saw a prompt without the
// MEMORY.md consolidation had just written). w.mu is held.
func (w *Workspace) changedDuring(d *deps) {
	if d != nil && d != fixed && d.stale() {
		w.gen.Add(1)
	}
}

// noteFile records the answer of a Load and returns it, keeping the earlier
// *File when the file is unchanged.
func (w *Workspace) noteFile(k memoKey, f *File, err error, d *deps, at time.Time) (*File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changedDuring(d)
	prev := w.memo[k]
	same := false
	switch {
	case prev == nil:
		same = f == nil && errors.Is(err, fs.ErrNotExist)
	case prev.file != nil && f != nil:
		// The same identity read again (a racy entry, see racyWindow, or
		// an event that changed nothing) is the same file only with the
		// same content.
		same = prev.file.ID == f.ID && prev.file.Text == f.Text
		if same {
			f = prev.file
		}
	case prev.file == nil && f == nil:
		same = errKey(prev.err) == errKey(err)
	}
	if !same {
		w.gen.Add(1)
	}
	if !same || d != nil || prev == nil || prev.deps != nil || !prev.at.Equal(at) {
		w.memo[k] = &entry{file: f, err: err, deps: d, at: at}
	}
	return f, err
}

// noteList records the answer of a ReadDir.
// dir is the folder's identity from a stat made before listing it, and at
// when; both zero when not known.
func (w *Workspace) noteList(k memoKey, list []fs.DirEntry, err error, d *deps, dir FileID, dirChanged, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changedDuring(d)
	prev := w.memo[k]
	same := prev != nil && errKey(prev.err) == errKey(err) && sameList(prev.list, list)
	if !same {
		w.gen.Add(1)
	}
	if !same || d != nil || prev.deps != nil || prev.dir != dir || !prev.at.Equal(at) {
		w.memo[k] = &entry{list: slices.Clone(list), err: err, deps: d, dir: dir, dirChanged: dirChanged, at: at}
	}
}

// noteBool records the answer of an IsDir or Exists and returns it.
func (w *Workspace) noteBool(k memoKey, yes bool, d *deps) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changedDuring(d)
	prev := w.memo[k]
	same := prev != nil && prev.yes == yes
	if !same {
		w.gen.Add(1)
	}
	if !same || d != nil || prev.deps != nil {
		w.memo[k] = &entry{yes: yes, deps: d}
	}
	return yes
}

// noteIDs records the answer of a LocalIDs.
func (w *Workspace) noteIDs(k memoKey, ids []FileID, err error, d *deps) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changedDuring(d)
	prev := w.memo[k]
	same := prev != nil && errKey(prev.err) == errKey(err) && slices.Equal(prev.ids, ids)
	if !same {
		w.gen.Add(1)
	}
	if !same || d != nil || prev.deps != nil {
		w.memo[k] = &entry{ids: ids, err: err, deps: d}
	}
}

func sameList(a, b []fs.DirEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name() != b[i].Name() || a[i].Type() != b[i].Type() {
			return false
		}
	}
	return true
}

// errKey tells errors apart for Generation: all "not exist" errors are one.
func errKey(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return "not exist"
	}
	return err.Error()
}

// maxHops bounds the symlinks walk follows, as the kernel bounds them.
const maxHops = 40

// walk finds what decides the answer for rel, while watching: each name
// looked up on the way, in its folder, following symlinks the way
// filepath.EvalSymlinks does, and with dir, the final folder's listing. Each
// folder is watched and its counters noted before the name is looked up, so
// any later change moves a counter. walk returns nil, meaning "check the disk
// each time", when not watching or when the answer depends on anything
// unwatched: a path outside the root, a watch that could not be added, an
// unexpected error.
func (w *Workspace) walk(rel string, dir bool) *deps {
	w.mu.Lock()
	watching := w.watcher != nil && !w.distrust
	w.mu.Unlock()
	if !watching {
		return nil
	}
	d := w.walkWatched(rel, dir)
	if d == nil {
		w.uncovered.Store(true)
	}
	return d
}

// Watching reports whether every answer the door has given is covered by
// its watcher, so that an unchanged [Workspace.Generation] alone proves
// nothing changed, with no read at all. It is false when not watching, after
// a watcher error, and once any answer had to be checked on disk instead
// (a symlink out of the workspace, a folder that could not be watched).
func (w *Workspace) Watching() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watcher != nil && !w.distrust && !w.uncovered.Load()
}

// renewed returns the dependencies of e, the last answer for the file rel,
// with the file's own counter brought up to date, when that counter is the
// only one that moved and e's walk went straight down rel, one folder per
// name with no symlink: the answer then depends on the file alone, which
// the caller reads again with no symlink followed. nil otherwise.
func (w *Workspace) renewed(e *entry, rel string) *deps {
	if e == nil || e.file == nil || e.deps == nil || !e.deps.straight {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watcher == nil || w.distrust {
		return nil
	}
	on := e.deps.on
	if len(on) != strings.Count(rel, "/")+1 {
		return nil
	}
	rest := rel
	for i, d := range on {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		if d.name != name || d.f.epoch != d.epoch || (i < len(on)-1 && d.f.at(name) != d.n) {
			return nil
		}
	}
	out := &deps{on: slices.Clone(on), straight: true}
	last := &out.on[len(on)-1]
	last.n = last.f.at(last.name)
	return out
}

func (w *Workspace) walkWatched(rel string, dir bool) *deps {
	d := &deps{straight: true}
	cur, todo := w.root, rel
	hops := 0
	for todo != "" {
		var c string
		c, todo, _ = strings.Cut(todo, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			d.straight = false
			if cur == w.root {
				return nil
			}
			cur = filepath.Dir(cur)
			continue
		}
		if !w.watchFolder(d, cur, c) {
			return nil
		}
		p := filepath.Join(cur, c)
		st, err := lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return d // decided by cur's entries, which are watched
			}
			return nil
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			w.linked.Store(true)
			d.straight = false
			if hops++; hops > maxHops {
				return nil
			}
			target, err := readlink(p)
			if err != nil {
				return nil
			}
			if filepath.IsAbs(target) {
				target = filepath.Clean(target)
				if !Within(w.root, target) {
					return nil
				}
				cur = w.root
				target, _ = filepath.Rel(w.root, target)
			}
			todo = strings.TrimSuffix(filepath.ToSlash(target)+"/"+todo, "/")
			continue
		}
		if !st.IsDir() {
			return d // a file, or "not a folder" if todo goes on: decided by cur's entries
		}
		cur = p
	}
	if dir && !w.watchFolder(d, cur, "") {
		return nil
	}
	if len(d.on) == 0 && !w.watchFolder(d, w.root, "/") {
		// rel is the root itself: only events on the root matter ("/" names
		// no child).
		return nil
	}
	return d
}

// watchFolder adds to d a dependency on name in dir (on its listing if name
// is ""), watching dir first if need be.
func (w *Workspace) watchFolder(d *deps, dir, name string) bool {
	w.mu.Lock()
	wt := w.watcher
	if wt == nil || w.distrust {
		w.mu.Unlock()
		return false
	}
	if f := w.dirs[dir]; f != nil {
		d.on = append(d.on, dep{f, name, f.epoch, f.at(name)})
		f.want(name)
		w.mu.Unlock()
		return true
	}
	w.mu.Unlock()
	// Not under mu: fsnotify takes its own lock, which its reader may hold
	// while it waits for the event goroutine, which may wait for mu.
	err := addWatch(wt, dir)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil || w.watcher != wt || w.distrust {
		return false
	}
	f := w.dirs[dir]
	if f == nil {
		f = &folder{}
		w.dirs[dir] = f
	}
	d.on = append(d.on, dep{f, name, f.epoch, f.at(name)})
	f.want(name)
	return true
}

// addWatch is wt.Add; tests replace it to make a watch fail.
var addWatch = func(wt *fsnotify.Watcher, dir string) error { return wt.Add(dir) }

// run hands the watcher's events and errors to the workspace until the
// watcher is closed.
func (w *Workspace) run(wt *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	events, errs := wt.Events, wt.Errors
	for events != nil || errs != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			w.onEvent(wt, ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			w.onError(wt, err)
		}
	}
	// The channels close on Close, or if the watcher died by itself; in the
	// second case nothing vouches for the caches any more.
	w.onError(wt, errors.New("the file watcher stopped"))
}

// onEvent raises the counters an event touches: the name it happened to, in
// its folder, that folder's listing when a name came or went, and the epoch
// of the folder it names, if watched. A folder removed or renamed loses its
// watch, and so does every watched folder under it: the kernel watch follows
// the moved folder, not the path.
func (w *Workspace) onEvent(wt *fsnotify.Watcher, ev fsnotify.Event) {
	name := filepath.Clean(ev.Name)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watcher != wt {
		return
	}
	listing := ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	if len(w.subs) > 0 && w.relevantEvent(name, listing) {
		w.notify(name, nil)
	}
	hit := false
	if f := w.dirs[filepath.Dir(name)]; f != nil {
		if len(f.names) >= maxNames {
			f.epoch++
			f.names = nil
		}
		if f.names == nil {
			f.names = map[string]uint64{}
		}
		f.names[filepath.Base(name)]++
		if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			f.list++
		}
		hit = true
	}
	if f := w.dirs[name]; f != nil {
		f.epoch++
		hit = true
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		for p, f := range w.dirs {
			if p == name || strings.HasPrefix(p, name+string(os.PathSeparator)) {
				f.epoch++
				delete(w.dirs, p)
				hit = true
			}
		}
	}
	if hit {
		w.gen.Add(1)
	}
	w.bumpTree(name)
}

// onError stops trusting the caches.
func (w *Workspace) onError(wt *fsnotify.Watcher, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watcher != wt || w.distrust {
		return
	}
	w.distrust = true
	w.watchErr = fmt.Errorf("workspace %s: watch: %w", QuotePath(w.root), err)
	w.gen.Add(1)
	w.bumpAll()
	w.notify("", w.watchErr)
}
