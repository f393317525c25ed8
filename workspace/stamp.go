package workspace

import (
	"slices"
	"strings"
)

// treeStamps are the counters behind [Workspace.TreeStamp]. Every change
// takes the next number of seq and writes it on the path it touched and on
// each folder above it; a change that voids everything writes it on all.
type treeStamps struct {
	seq  uint64
	all  uint64
	path map[string]uint64
	// self holds, for each path, the last change at that path itself: a
	// folder created, removed, renamed or changed replaces what is under
	// it, including paths under it that no read has watched yet.
	self map[string]uint64
	// log holds the latest changes in order, for ChangedSince; gone is
	// the newest seq no longer in it.
	log  []logged
	next int // where the next change goes once log is full
	gone uint64
}

type logged struct {
	seq uint64
	rel string
}

// logSize is how many changes ChangedSince can look back over.
const logSize = 1024

// bump marks rel (clean, slash-separated, "" for the root) and every folder
// above it as changed. The caller holds w.mu.
func (t *treeStamps) bump(rel string) {
	t.seq++
	if len(t.log) < logSize {
		t.log = append(t.log, logged{t.seq, rel})
	} else {
		t.gone = t.log[t.next].seq
		t.log[t.next] = logged{t.seq, rel}
		t.next = (t.next + 1) % logSize
	}
	if t.path == nil {
		t.path, t.self = map[string]uint64{}, map[string]uint64{}
	}
	if len(t.path) > maxStampPaths || len(t.self) > maxStampPaths {
		// A stream of uniquely named files must not grow the maps for
		// ever: start again, with everything marked changed.
		clear(t.path)
		clear(t.self)
		t.all = t.seq
		return
	}
	t.self[rel] = t.seq
	for {
		t.path[rel] = t.seq
		if rel == "" {
			return
		}
		i := strings.LastIndexByte(rel, '/')
		if i < 0 {
			rel = ""
		} else {
			rel = rel[:i]
		}
	}
}

// maxStampPaths bounds the paths whose stamps are kept.
const maxStampPaths = 1 << 16

// at is rel's stamp: the last change at rel or under it, or at a folder
// above it, or to everything.
func (t *treeStamps) at(rel string) uint64 {
	n := max(t.path[rel], t.all)
	for rel != "" {
		i := strings.LastIndexByte(rel, '/')
		rel = rel[:max(i, 0)]
		n = max(n, t.self[rel])
	}
	return n
}

// bumpAll marks everything changed. The caller holds w.mu.
func (w *Workspace) bumpAll() {
	w.trees.seq++
	w.trees.all = w.trees.seq
}

// bumpTree marks the real path name (from a watcher event) changed, if it
// is inside the root. The caller holds w.mu.
func (w *Workspace) bumpTree(name string) {
	if !Within(w.root, name) {
		return
	}
	w.trees.bump(relTo(w.root, name))
}

// TreeStamp returns a number that rises whenever the watcher reports a
// change at rel or anywhere under it, or at a folder above it (made,
// removed, renamed: what is under it was replaced), and whenever anything
// voids the door's caches (a watcher failure, a new size cap, a write
// through the door), with ok true only while the door can vouch for it: it is watching
// ([Workspace.Watching]) and no read so far has gone through a symlink,
// whose target the path of rel would not name. A caller that kept what it
// built from reads under rel, together with the stamp it read before them,
// may use it again while the stamp is unchanged and ok: nothing under rel
// has changed since, as far as the watcher has told (see [Workspace.Watch]
// for what it cannot see).
func (w *Workspace) TreeStamp(rel string) (stamp uint64, ok bool) {
	if w.fsys != nil {
		return 0, true // an fs.FS-backed workspace never changes
	}
	rel = cleanRel(rel)
	if !inside(rel) {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watcher == nil || w.distrust || w.uncovered.Load() || w.linked.Load() {
		return 0, false
	}
	return w.trees.at(rel), true
}

// ChangedSince returns the names of the entries directly in the folder rel
// that changed, or had something under them change, after stamp since (a
// value TreeStamp returned for rel), sorted, with ok true when it can tell:
// while the door vouches for its stamps, when the changes since are still
// remembered (the last thousand or so), and when nothing voided every
// stamp or touched rel itself in between. With ok false the caller must
// look at everything under rel again.
func (w *Workspace) ChangedSince(rel string, since uint64) (names []string, ok bool) {
	if w.fsys != nil {
		return nil, true
	}
	rel = cleanRel(rel)
	if !inside(rel) {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := &w.trees
	if w.watcher == nil || w.distrust || w.uncovered.Load() || w.linked.Load() || since < t.all || since < t.gone {
		return nil, false
	}
	prefix := rel + "/"
	if rel == "" {
		prefix = ""
	}
	for _, l := range t.log {
		if l.seq <= since {
			continue
		}
		if l.rel == rel || l.rel == "" || strings.HasPrefix(rel, l.rel+"/") {
			return nil, false // rel itself, or a folder above it, changed
		}
		rest, under := strings.CutPrefix(l.rel, prefix)
		if !under {
			continue
		}
		name, _, _ := strings.Cut(rest, "/")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, true
}
