package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/loomctx/loom/starter"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/workspace"
)

// Options configures a [Loader]. The zero value loads the workspace's
// skills and the built-in ones, checking requirements against this process.
type Options struct {
	// Paths are extra skill folders (loom.yaml skills.paths), each holding
	// <name>/SKILL.md folders. A relative path is inside the workspace and is
	// read through its door; one that climbs out of it is refused. An
	// absolute path outside the workspace becomes a door of its own, with
	// the same size cap, text normalisation and symlink containment, so a
	// link out of that folder is refused just as one out of the workspace
	// is. When the paths come from the workspace itself (FromWorkspace), a
	// folder outside it is used only if the operator allows it.
	Paths []string
	// FromWorkspace says Paths came from the workspace's loom.yaml, which
	// may come from someone else: a folder outside the workspace is then
	// refused, with a warning, unless it is inside a folder the
	// operator lists in $LOOM_SKILLS_PATHS (separated like $PATH).
	// [FromConfig] sets it.
	FromWorkspace bool
	// AbsolutePaths shows workspace skills to the model by absolute path
	// (loom.yaml skills.absolute_paths). Relative paths are the default:
	// absolute ones leak where things are installed and differ across
	// machines, which also breaks prompt caching.
	AbsolutePaths bool
	// Builtins replaces the embedded built-in skills; the files are
	// builtin/<name>/SKILL.md inside it. NoBuiltins leaves them out.
	Builtins   fs.FS
	NoBuiltins bool
	// CacheDir is the absolute folder the built-in skills' files are
	// written under (see [CacheDir]); "" means $LOOM_CACHE_DIR or the
	// user's cache folder. Nothing is ever written into the workspace.
	CacheDir string
	// LookPath, Getenv and GOOS decide availability; nil or "" mean
	// exec.LookPath, os.Getenv and runtime.GOOS. Tests inject their own.
	LookPath func(string) (string, error)
	Getenv   func(string) string
	GOOS     string
}

// EnvSkillsPaths lists the folders outside a workspace (separated like
// $PATH) from which the operator lets a workspace's loom.yaml take skills.
const EnvSkillsPaths = "LOOM_SKILLS_PATHS"

// operatorAllows reports whether the absolute folder p is inside a folder
// the operator listed in $LOOM_SKILLS_PATHS.
func (l *Loader) operatorAllows(p string) bool {
	getenv := l.opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		real = p
	}
	for _, a := range filepath.SplitList(getenv(EnvSkillsPaths)) {
		if a == "" || !filepath.IsAbs(a) {
			continue
		}
		a = filepath.Clean(a)
		if ra, err := filepath.EvalSymlinks(a); err == nil {
			a = ra
		}
		if workspace.Within(a, real) {
			return true
		}
	}
	return false
}

// Workspace folders that hold skills.
const (
	// FolderDir holds the Agent Skills layout: <name>/SKILL.md.
	FolderDir = "skills"
	// FlatDir holds nao's flat layout: <name>.md.
	FlatDir = "agent/skills"
	// FileName is the file that makes a folder a skill.
	FileName = "SKILL.md"
)

// root is one place skills are looked for.
type root struct {
	door   *workspace.Workspace
	dir    string // folder inside the door, slash-separated
	flat   bool
	source Source
	rank   int
	// configured is the path as the user gave it; external is true when
	// the door is a folder outside the workspace.
	configured string
	external   bool
	// memoKey names the root in rootMemo.
	memoKey string
}

type cacheEntry struct {
	file   *workspace.File
	parsed *parsed
	// base is the skill last made from file; it is handed out again while
	// its availability is unchanged, so that its pointer stays the same.
	base *Skill
	// seen is the last Load that loaded the file or found it in a
	// root's memo, for the cache's sweep.
	seen uint64
}

// fileKey names a skill file in the parse cache.
type fileKey struct {
	source    Source
	root, rel string
}

// Loader finds and parses the skills of one workspace. It keeps parsed
// files keyed by the door's *workspace.File, which stays the same pointer
// while a file is unchanged on disk, so a reload re-reads and re-parses only
// what changed. A Loader belongs to one workspace; nothing is shared between
// Loaders. It is safe for concurrent use.
type Loader struct {
	ws   *workspace.Workspace
	opts Options

	mu      sync.Mutex
	extDoor map[string]*workspace.Workspace // absolute extra folder → its door
	builtin *workspace.Workspace
	// fixedRoots are the roots when there are no extra folders: they are
	// the same for every load.
	fixedRoots []root

	// What a Load keeps for the next, one type per kind of thing kept,
	// each with its key and what invalidates it where it is declared.
	parsed       parseCache
	bins         binCache
	builtinFiles builtinFiles
	memo         loadMemo
	scratch      loadScratch

	parses  atomic.Int64 // files parsed, for tests
	patches atomic.Int64 // Sets made by patchSet, for tests
	// rootPatches counts roots loaded by patchRoot, for tests.
	rootPatches atomic.Int64
}

// parseCache keeps each skill file's parse and the Skill last made from it.
//
// Key: the file (fileKey: its source, root and path). Valid while the
// file's door hands out the same *workspace.File for it, which it does
// while the file is unchanged on disk: an entry whose file is another
// pointer is replaced, never changed. Entries the latest Load did not use
// are swept after a load that took nothing from loadMemo, and otherwise
// once the cache holds more than twice (plus 64) the skills in use.
type parseCache struct {
	mu    sync.Mutex // guards m while files load in parallel
	m     map[fileKey]*cacheEntry
	loads uint64 // Loads made, numbering them for cacheEntry.seen
}

// binCache remembers PATH searches across loads, so that a warm load
// costs no system calls for them while a newly installed program is still
// seen soon.
//
// Key: the program's name. Invalidated, all at once, when $PATH changed,
// after binsFresh, and at every load when Options injects LookPath or
// Getenv; each fresh start raises epoch, and whatever was checked in an
// older epoch (a rootMemo's skills) is checked again.
type binCache struct {
	found map[string]bool
	path  string // $PATH when found was started
	since time.Time
	epoch uint64
	chk   *checker // checks availability against found
}

// builtinFiles are the built-in skills' files in the cache folder (see
// [CacheDir]), opened at the first built-in skill.
//
// Key: the file's path in that folder; the value is the text it was
// checked or written to hold. Never invalidated in a Loader's life: a
// file is written once when it is missing or holds something else.
type builtinFiles struct {
	written map[string]string
	home    *workspace.Workspace // the folder's door
	err     error                // why the folder could not be opened
}

// loadMemo is what the last Load made, so that the next one reuses what
// did not change: each watched root's skills (see loadRoot), the list of
// all skills, their sorted order and the Set.
//
// Key: roots by the root's memoKey; the rest belongs to the last Load.
// A root's entry holds while the workspace's stamp of its folder and the
// binCache epoch are those it was made in; when the stamp moved, the
// workspace's change log names the entries to read again. The Set is
// handed out again when the same skills, in the same order, with the
// same diagnostics, came from the same number of roots.
type loadMemo struct {
	roots map[string]*rootMemo
	// set is the last Set, made from nroots roots with diags.
	set    *Set
	all    []*Skill // the skills last made into a Set, in load order
	nroots int
	diags  workspace.Diagnostics
	// sortKeys are the names and ranks of the last sorted load, in load
	// order, and sortPerm its sorted order (see sorted).
	sortKeys []sortKey
	sortPerm []int
	sortInv  []int // load index → sorted place
	// listings is what each root not remembered in roots (one without a
	// watch) listed last (see rootListing), by root rank.
	listings []*rootListing
	// spareAll is a list no Set or memo holds, for the next load's
	// skills: a load that changed a skill fills it and hands the last
	// list back here.
	spareAll  []*Skill
	reusedAny bool // this load took something from roots
}

// loadScratch are lists loadRoot fills and empties on every call (Load is
// under the Loader's mu): not a cache, nothing in them outlives a call.
type loadScratch struct {
	jobs  []loadJob
	fresh []bool
	todo  []int
}

// rootMemo is what one root loaded, with the workspace's stamp of its
// folder and the availability epoch it was checked in. While both hold,
// nothing in it changed; when the stamp moved, the workspace's change log
// names the entries that changed, and the others are taken as they were.
type rootMemo struct {
	stamp uint64
	epoch uint64
	out   []*Skill
	diags workspace.Diagnostics
	jobs  []jobMemo // in listing order
}

// loadJob is one folder entry in loadRoot.
type loadJob struct {
	jobMemo
	reused    bool
	skillName string // the name its place gives the skill
}

// rootListing is what a root that is not remembered (one without a watch)
// listed at its last load: the entries' names and skill files, so that a
// load that lists the same entries makes no file names again, and the
// list of its skills, which nobody keeps past a Load, to be filled again.
type rootListing struct {
	key         string // the root's memoKey
	names, rels []string
	out         []*Skill
}

type jobMemo struct {
	name, rel string  // the folder entry's name, the skill file
	skill     *Skill  // nil: no skill there
	key       fileKey // the file's parse cache key; its rel is "" when none
	skip      bool    // left out as an untouched template
}

// binsFresh bounds how long a PATH search result is reused.
const binsFresh = 2 * time.Second

// New returns a loader for ws.
func New(ws *workspace.Workspace, opts Options) *Loader {
	l := &Loader{ws: ws, opts: opts, extDoor: map[string]*workspace.Workspace{}, parsed: parseCache{m: map[fileKey]*cacheEntry{}}, builtinFiles: builtinFiles{written: map[string]string{}}}
	if !opts.NoBuiltins {
		fsys := opts.Builtins
		if fsys == nil {
			fsys = builtinFS
		}
		l.builtin = workspace.OpenFS(fsys)
	}
	return l
}

// Workspace is the workspace the loader reads.
func (l *Loader) Workspace() *workspace.Workspace { return l.ws }

// Options returns the options the loader was made with.
func (l *Loader) Options() Options { return l.opts }

// Load finds every skill, parses what changed since the last Load, checks
// availability and precedence, and returns the result. It never fails: a
// problem with one skill or folder is a diagnostic, and the rest load.
func (l *Loader) Load() *Set {
	l.mu.Lock()
	defer l.mu.Unlock()

	var diags workspace.Diagnostics
	roots := l.roots(&diags)
	if pathEnv := os.Getenv("PATH"); l.bins.found == nil || l.opts.LookPath != nil || l.opts.Getenv != nil || pathEnv != l.bins.path || time.Since(l.bins.since) > binsFresh {
		l.bins.found, l.bins.path, l.bins.since = map[string]bool{}, pathEnv, time.Now()
		l.bins.epoch++
		l.bins.chk = nil
	}
	if l.bins.chk == nil {
		chk := &checker{lookPath: l.opts.LookPath, getenv: l.opts.Getenv, goos: l.opts.GOOS, bins: l.bins.found}
		if chk.lookPath == nil {
			chk.lookPath = exec.LookPath
		}
		if chk.getenv == nil {
			chk.getenv = os.Getenv
		}
		if chk.goos == "" {
			chk.goos = runtime.GOOS
		}
		l.bins.chk = chk
	}
	chk := l.bins.chk

	// Every file a load reads is marked with its number; a watched load
	// leaves the files of the roots it remembers to the sweep, which finds
	// them in rootMemo.
	l.parsed.loads++
	l.memo.reusedAny = false
	// Each root's skills are joined into one list only when some root's
	// changed: when the roots are the fixed ones and each gave what it gave
	// last, the list is the last one.
	var outsBuf [8][]*Skill
	outs := outsBuf[:0]
	same := l.memo.set != nil
	for i := range roots {
		out, reused := l.loadRoot(&roots[i], chk, &diags)
		same = same && reused
		outs = append(outs, out)
	}
	var all []*Skill
	fromSpare := false
	if same && l.fixedRoots != nil && len(roots) == l.memo.nroots {
		all = l.memo.all
	} else {
		all, l.memo.spareAll, fromSpare = l.memo.spareAll[:0], nil, true
		for _, out := range outs {
			all = append(all, out...)
		}
	}
	// Parsed files nobody loads any more go, checked when the cache has
	// grown past twice what is in use: a watched load that read a few
	// files again does not walk it.
	if len(l.parsed.m) > 2*len(all)+64 || !l.memo.reusedAny {
		for _, m := range l.memo.roots {
			for _, j := range m.jobs {
				if ce := l.parsed.m[j.key]; ce != nil && j.key.rel != "" {
					ce.seen = l.parsed.loads
				}
			}
		}
		for k, ce := range l.parsed.m {
			if ce.seen != l.parsed.loads {
				delete(l.parsed.m, k)
			}
		}
	}
	// The same skills (each file unchanged hands out the skill made from it
	// before) in the same order, with the same diagnostics, make the same
	// Set: a load that validated every file by its stat, without a watch,
	// finds that as a watched one does.
	if l.memo.set != nil && (same || slices.Equal(all, l.memo.all)) && len(roots) == l.memo.nroots && slices.Equal(diags, l.memo.diags) {
		if fromSpare {
			l.memo.spareAll = all[:0]
		}
		return l.memo.set // nothing changed: the very same Set
	}
	prevAll, prev, prevDiags := l.memo.all, l.memo.set, l.memo.diags
	l.memo.all = all
	defer func() {
		// Nothing holds the last list once the new Set is made (patchSet
		// and sorted read it, and keep nothing of it).
		if fromSpare {
			l.memo.spareAll = prevAll[:0]
		}
	}()
	set := l.patchSet(prev, prevAll, prevDiags, all, diags)
	if set == nil {
		set = l.newSet(all, diags)
	}
	l.memo.set, l.memo.nroots, l.memo.diags = set, len(roots), diags
	return l.memo.set
}

// roots lists the places to look, in precedence order. Nobody may
// change what it returns.
func (l *Loader) roots(diags *workspace.Diagnostics) []root {
	if l.fixedRoots != nil {
		return l.fixedRoots
	}
	rs := []root{
		{door: l.ws, dir: FolderDir, source: SourceWorkspace},
		{door: l.ws, dir: FlatDir, flat: true, source: SourceWorkspace},
	}
	for _, p := range l.opts.Paths {
		r, ok := l.extraRoot(p, diags)
		if ok {
			rs = append(rs, r)
		}
	}
	if l.builtin != nil {
		rs = append(rs, root{door: l.builtin, dir: "builtin", source: SourceBuiltin})
	}
	for i := range rs {
		r := &rs[i]
		r.rank = i
		r.memoKey = string(r.source) + "\x00" + r.door.Root() + "\x00" + r.dir + "\x00" + strconv.FormatBool(r.flat)
	}
	if len(l.opts.Paths) == 0 {
		// Only extra folders ask the file system where they are.
		l.fixedRoots = rs
	}
	return rs
}

func (l *Loader) extraRoot(p string, diags *workspace.Diagnostics) (root, bool) {
	orig := p
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		rel := path.Clean(filepath.ToSlash(p))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			diags.Add(workspace.Error, rel, 0, "skills.path", "skills path %q climbs out of the workspace; give an absolute path to use a folder outside it", orig)
			return root{}, false
		}
		return root{door: l.ws, dir: rel, source: SourceExtra, configured: orig}, true
	}
	p = filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(p); err == nil && l.ws.Root() != "" && workspace.Within(l.ws.Root(), real) {
		rel, _ := filepath.Rel(l.ws.Root(), real)
		return root{door: l.ws, dir: filepath.ToSlash(rel), source: SourceExtra, configured: orig}, true
	}
	if l.opts.FromWorkspace && !l.operatorAllows(p) {
		diags.Add(workspace.Warning, config.FileName, 0, "skills.path-outside", "skills path %s is outside the workspace; loom.yaml cannot add one unless the operator allows it in %s", workspace.QuotePath(orig), EnvSkillsPaths)
		return root{}, false
	}
	door := l.extDoor[p]
	if door == nil {
		d, err := workspace.Open(p)
		if err != nil {
			diags.Add(workspace.Warning, p, 0, "skills.path", "skills path: folder does not exist or cannot be opened")
			return root{}, false
		}
		door = d
		l.extDoor[p] = d
	}
	return root{door: door, source: SourceExtra, configured: orig, external: true}, true
}

// display is how a file of r is named in diagnostics and, unless absolute
// locations are asked for, to the model.
func (r *root) display(rel string) string {
	if r.external {
		return filepath.Join(r.door.Root(), filepath.FromSlash(rel))
	}
	return rel
}

func (l *Loader) location(r *root, rel string) string {
	if l.opts.AbsolutePaths && r.source != SourceBuiltin && !r.external {
		return r.door.Abs(rel)
	}
	return r.display(rel)
}

// It reports whether what it returns is what the last load of the root
// returned, with nothing read.
func (l *Loader) loadRoot(r *root, chk *checker, diags *workspace.Diagnostics) ([]*Skill, bool) {
	// A root of the watched workspace (or of the built-in skills, which
	// never change) whose folder's stamp held since it was last loaded, in
	// the same availability epoch, gives the same skills: nothing is read.
	// Within a root whose stamp moved, the skills the workspace's change
	// log does not name are taken as they were, and only the others are
	// read again.
	memoKey := r.memoKey
	var stamp uint64
	watched := false
	switch {
	case r.door == l.builtin:
		watched = true
	case r.door == l.ws && !r.external:
		stamp, watched = l.ws.TreeStamp(r.dir)
	}
	var prev *rootMemo
	var changed []string
	if watched {
		prev = l.memo.roots[memoKey]
		if prev != nil && prev.stamp == stamp && prev.epoch == l.bins.epoch {
			l.memo.reusedAny = true
			*diags = append(*diags, prev.diags...)
			return prev.out, true
		}
		if prev != nil && prev.stamp != stamp {
			var ok bool
			if changed, ok = l.ws.ChangedSince(r.dir, prev.stamp); !ok {
				prev = nil
			}
		}
	} else {
		delete(l.memo.roots, memoKey)
	}
	if prev != nil && prev.stamp != stamp && prev.epoch == l.bins.epoch {
		if out, ok := l.patchRoot(r, prev, changed, stamp, chk); ok {
			*diags = append(*diags, prev.diags...)
			return out, false
		}
	}
	before := len(*diags)
	entries, err := r.door.ReadDir(r.dir)
	if err != nil {
		if !notExist(err) {
			diags.Add(workspace.Error, r.display(r.dir), 0, workspace.RefusalCode(err), "skills folder: %s", workspace.RefusalMessage(err))
		}
		if watched {
			l.rememberRoot(memoKey, &rootMemo{stamp: stamp, epoch: l.bins.epoch, diags: slices.Clone((*diags)[before:])})
		}
		return nil, false
	}
	// In a new availability epoch (PATH searched afresh), a skill kept
	// from the last load is kept only if what it needs is still there.
	recheck := prev != nil && prev.epoch != l.bins.epoch
	jobs := l.scratch.jobs[:0]
	defer func() { clear(jobs); l.scratch.jobs = jobs[:0] }()
	var old []jobMemo
	if prev != nil {
		old = prev.jobs
	}
	var listing *rootListing
	if !watched {
		listing = l.listingOf(r, memoKey)
	}
	jobs = l.listJobs(r, entries, jobs, old, changed, recheck, chk, listing)
	fresh := l.runJobs(r, jobs, chk)
	defer func() { l.scratch.fresh = fresh[:0] }()
	var out []*Skill
	if listing != nil {
		// Load copies what an unremembered root gave and keeps nothing of
		// it: the list is filled again at the root's next load.
		out = listing.out[:0]
		defer func() { listing.out = out }()
	} else {
		out = make([]*Skill, 0, len(jobs))
	}
	var memo *rootMemo
	if watched {
		memo = &rootMemo{stamp: stamp, epoch: l.bins.epoch, jobs: make([]jobMemo, 0, len(jobs))}
	}
	for i := range jobs {
		j := &jobs[i]
		s := j.skill
		if !j.reused && s != nil {
			if fresh[i] && r.source == SourceBuiltin && s.Status != StatusBroken {
				l.materialize(s)
			}
			if s.untouched {
				j.skip = true
			}
		}
		if memo != nil {
			memo.jobs = append(memo.jobs, j.jobMemo)
		}
		if s == nil {
			continue
		}
		if j.skip {
			diags.Add(workspace.Warning, s.Path, 0, "skill.untouched-template", "left out: still loom's starter template")
			continue
		}
		out = append(out, s)
	}
	if memo != nil {
		memo.out = out
		memo.diags = slices.Clone((*diags)[before:])
		l.rememberRoot(memoKey, memo)
	}
	return out, false
}

// listingOf returns the listing an unwatched root keeps between loads, by
// rank, which no two roots of a load share.
func (l *Loader) listingOf(r *root, memoKey string) *rootListing {
	for len(l.memo.listings) <= r.rank {
		l.memo.listings = append(l.memo.listings, nil)
	}
	listing := l.memo.listings[r.rank]
	if listing == nil || listing.key != memoKey {
		listing = &rootListing{key: memoKey}
		l.memo.listings[r.rank] = listing
	}
	return listing
}

// listJobs appends to jobs one job per entry of the root's folder that may
// hold a skill, in name order: a job kept from the last load (old) when the
// entry is not among the changed ones and, in a new availability epoch
// (recheck), what it needs is still there; else a job to read it. With a
// listing (an unwatched root), entries it shares with the last listing keep
// their file names, and the listing is updated.
func (l *Loader) listJobs(r *root, entries []fs.DirEntry, jobs []loadJob, old []jobMemo, changed []string, recheck bool, chk *checker, listing *rootListing) []loadJob {
	var lastNames, lastRels []string
	sameListing := false
	if listing != nil {
		lastNames, lastRels, sameListing = listing.names, listing.rels, true
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		// The listing and the last one are both sorted by name.
		for len(old) > 0 && old[0].name < name {
			old = old[1:]
		}
		if len(old) > 0 && old[0].name == name && !slices.Contains(changed, name) &&
			!(recheck && old[0].skill != nil && old[0].skill.Status != StatusBroken &&
				!chk.same(&old[0].skill.Frontmatter, old[0].skill.Missing)) {
			jobs = append(jobs, loadJob{jobMemo: old[0], reused: true})
			l.memo.reusedAny = true
			continue
		}
		skillName, ok := entrySkillName(r, e)
		if !ok {
			continue
		}
		// The entries this listing shares with the last one, in the same
		// order (both are sorted), keep their file names.
		var rel string
		if k := len(jobs); sameListing && k < len(lastNames) && lastNames[k] == name {
			rel = lastRels[k]
		} else {
			sameListing = false
			if r.flat {
				rel = joinRel(r.dir, name, "")
			} else {
				rel = joinRel(r.dir, name, FileName)
			}
		}
		jobs = append(jobs, loadJob{jobMemo: jobMemo{name: name, rel: rel}, skillName: skillName})
	}
	if listing != nil && !(sameListing && len(jobs) == len(lastNames)) {
		listing.names, listing.rels = make([]string, len(jobs)), make([]string, len(jobs))
		for i := range jobs {
			listing.names[i], listing.rels[i] = jobs[i].name, jobs[i].rel
		}
	}
	return jobs
}

// entrySkillName is the name of the skill a folder entry may hold: a
// folder (or a link to one) names its skill; in a flat root, a NAME.md
// file.
func entrySkillName(r *root, e fs.DirEntry) (string, bool) {
	name := e.Name()
	if r.flat {
		if e.IsDir() || !strings.HasSuffix(name, ".md") {
			return "", false
		}
		return strings.TrimSuffix(name, ".md"), true
	}
	if !e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
		return "", false
	}
	return name, true
}

// runJobs reads and parses the jobs not reused. Reading and parsing are
// independent per file, and a cold load of a large folder is mostly that,
// so it is spread over the processors. fresh[i] reports that job i's skill
// was parsed now rather than taken from the parse cache; it is the
// loader's scratch, which the caller gives back.
func (l *Loader) runJobs(r *root, jobs []loadJob, chk *checker) (fresh []bool) {
	fresh = append(l.scratch.fresh[:0], make([]bool, len(jobs))...)
	todo := l.scratch.todo[:0]
	defer func() { l.scratch.todo = todo[:0] }()
	for i, j := range jobs {
		if !j.reused {
			todo = append(todo, i)
		}
	}
	if len(l.parsed.m) == 0 && len(todo) > 8 {
		// A first load: the parse cache is sized once, not grown.
		l.parsed.mu.Lock()
		l.parsed.m = make(map[fileKey]*cacheEntry, len(todo))
		l.parsed.mu.Unlock()
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo)/8+1)
	if len(todo) > 1 {
		// One descriptor of the root for the whole folder, not one per file.
		defer r.door.Hold()()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < len(todo); k = int(next.Add(1) - 1) {
				j := &jobs[todo[k]]
				j.skill, j.key, fresh[todo[k]] = l.loadOne(r, j.skillName, j.rel, fileKey{}, chk)
			}
		}()
	}
	wg.Wait()
	return fresh
}

// maxRootPatch bounds the entries patchRoot loads again.
const maxRootPatch = 16

// patchRoot is loadRoot for a folder root of the watched workspace whose
// change log named a few entries that were there at its last load (a
// skill's file edited): the folder's listing and its other entries are
// not looked at, and only those entries are loaded again, into the last
// load's memo, which it updates in place. It reports false, having
// changed nothing, whenever that would not be what loadRoot gives: an
// entry added, removed or no longer a skill, or left out as a starter
// template now or before.
func (l *Loader) patchRoot(r *root, prev *rootMemo, changed []string, stamp uint64, chk *checker) ([]*Skill, bool) {
	if r.flat || r.door != l.ws || r.external || r.source != SourceWorkspace || len(changed) > maxRootPatch {
		return nil, false
	}
	type patch struct {
		k   int // place in prev.jobs
		job jobMemo
	}
	var buf [4]patch
	patches := buf[:0]
	for _, name := range changed {
		k, found := slices.BinarySearchFunc(prev.jobs, name, func(j jobMemo, name string) int { return strings.Compare(j.name, name) })
		if !found || prev.jobs[k].skill == nil || prev.jobs[k].skip {
			return nil, false
		}
		j := jobMemo{name: name, rel: prev.jobs[k].rel}
		j.skill, j.key, _ = l.loadOne(r, name, j.rel, prev.jobs[k].key, chk)
		if j.skill == nil {
			return nil, false // gone, or no longer a folder with a skill
		}
		if j.skill.untouched {
			return nil, false
		}
		patches = append(patches, patch{k, j})
	}
	// Every job before is in out, in order (none is left out).
	for _, p := range patches {
		at := 0
		for _, j := range prev.jobs[:p.k] {
			if j.skill != nil && !j.skip {
				at++
			}
		}
		prev.jobs[p.k] = p.job
		prev.out[at] = p.job.skill
	}
	prev.stamp = stamp
	l.memo.reusedAny = true
	l.rootPatches.Add(1)
	return prev.out, true
}

func (l *Loader) rememberRoot(key string, m *rootMemo) {
	if l.memo.roots == nil {
		l.memo.roots = map[string]*rootMemo{}
	}
	l.memo.roots[key] = m
}

// loadOne loads the skill file rel of r, or returns nil when there is no such
// file (a folder without SKILL.md is not a skill). It also returns the
// file's parse cache key, and whether the skill is newly made: a skill
// whose file and availability are unchanged is the one made before, which
// nobody may change. key, when its rel is not "", is the file's parse
// cache key.
func (l *Loader) loadOne(r *root, name, rel string, key fileKey, chk *checker) (*Skill, fileKey, bool) {
	f, err := r.door.Load(rel)
	if err != nil {
		if notExist(err) {
			return nil, fileKey{}, false
		}
		s := &Skill{Name: name, Source: r.source, Path: r.display(rel), Location: l.location(r, rel), rank: r.rank}
		s.Status = StatusBroken
		s.Diagnostics.Add(workspace.Error, s.Path, 0, workspace.RefusalCode(err), "%s", workspace.RefusalMessage(err))
		return s, fileKey{}, true
	}
	if key.rel == "" {
		key = fileKey{r.source, r.door.Root(), rel}
	}
	l.parsed.mu.Lock()
	ce, ok := l.parsed.m[key]
	if ok {
		ce.seen = l.parsed.loads
	}
	l.parsed.mu.Unlock()
	if ok && ce.file == f && ce.base != nil {
		if ce.parsed.broken {
			return ce.base, key, false
		}
		if chk.same(&ce.base.Frontmatter, ce.base.Missing) {
			return ce.base, key, false
		}
	}
	if !ok || ce.file != f {
		ce = &cacheEntry{file: f, parsed: l.parse(r.display(rel), name, r.flat, f), seen: l.parsed.loads}
	} else {
		c := *ce // a new base for the same file: the entry is replaced, not changed
		ce = &c
	}
	s := &Skill{Name: name, Source: r.source, Path: r.display(rel), Location: l.location(r, rel), rank: r.rank}
	p := ce.parsed
	if p.name != "" {
		s.Name = p.name
	}
	s.Frontmatter = p.fm
	s.Body = p.body
	s.raw = f.Text
	s.Diagnostics = append(s.Diagnostics, p.diags...)
	if p.broken {
		s.Status = StatusBroken
	} else {
		s.Missing = chk.missing(&s.Frontmatter)
		s.Available = len(s.Missing) == 0
		s.untouched = r.source == SourceWorkspace && starter.IsUntouched(rel, s.raw)
	}
	ce.base = s
	l.parsed.mu.Lock()
	l.parsed.m[key] = ce
	l.parsed.mu.Unlock()
	return s, key, true
}

// joinRel is path.Join(dir, name, file) for a clean dir, a folder
// entry's name (never "." or "..", never with a slash) and a file name or
// "", made in one concatenation instead of path.Join's cleaning.
func joinRel(dir, name, file string) string {
	switch {
	case dir == "" || dir == "." || strings.HasSuffix(dir, "/"):
		return path.Join(dir, name, file)
	case file == "":
		return dir + "/" + name
	}
	return dir + "/" + name + "/" + file
}

func (l *Loader) parse(display, name string, flat bool, f *workspace.File) *parsed {
	l.parses.Add(1)
	p := parseSkill(display, f.Text)
	var diags workspace.Diagnostics
	for _, r := range f.Repairs {
		diags.Add(workspace.Warning, display, 0, "read.repaired", "%s", r)
	}
	diags = append(diags, p.diags...)
	if !p.broken && p.hasFM {
		// nao names a flat agent/skills/<file>.md skill by its frontmatter
		// name; the file name is only the fallback. A folder skill keeps its
		// folder's name, so that it is always found where its name says.
		if flat {
			if n := strings.TrimSpace(p.fm.Name); usableName(n) {
				name, p.name = n, n
			}
		}
		validate(display, name, &p.fm, &diags)
	}
	p.diags = diags
	return p
}

// notExist reports whether err means "nothing there", including a path
// through something that is not a folder.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Set is the result of one [Loader.Load]: every skill found, in a
// deterministic order, and every diagnostic.
type Set struct {
	// Skills holds every skill found, shadowed and broken ones included,
	// sorted by name and, within a name, by precedence (the winner first).
	Skills []*Skill
	// Diagnostics holds folder-level diagnostics, then each skill's, in
	// the order of Skills.
	Diagnostics workspace.Diagnostics

	byName     map[string]*Skill // made on the first Get
	byNameOnce sync.Once
	id         uint64
	// diagAt[k] is where Skills[k]'s diagnostics start in Diagnostics
	// (one more for the end), for patchSet.
	diagAt []int
	// A Set patchSet made says what it was made from: the Set numbered
	// from, with the skills at the places changed (in order) replaced;
	// replaced holds the skills that were there. A summary or Active
	// section kept for that Set is then changed in those places alone.
	// from is 0 for a Set made whole.
	from     uint64
	changed  []int
	replaced []*Skill
}

// newSet sorts the loaded skills and settles precedence. The skills a
// Loader loaded are left as they are (a later Load may hand them out
// again): each goes into the Set as a copy with its status, or as the very
// copy the last Set had when nothing about it changed (its base's final),
// so that a caller that keeps what it built from a *Skill can keep it.
func (l *Loader) newSet(loaded []*Skill, folderDiags workspace.Diagnostics) *Set {
	all := l.sorted(loaded)
	s := &Set{Skills: make([]*Skill, len(all))}
	s.Diagnostics = append(s.Diagnostics, folderDiags...)
	// Sorted by name, then precedence: the first of a name wins, and the
	// others of that name follow it.
	s.diagAt = make([]int, len(all)+1)
	var win *Skill
	for i, base := range all {
		if win != nil && win.Name != base.Name {
			win = nil
		}
		sk := finalOf(base, win)
		s.Skills[i] = sk
		if win == nil {
			win = sk
		}
		s.diagAt[i] = len(s.Diagnostics)
		s.Diagnostics = append(s.Diagnostics, sk.Diagnostics...)
	}
	s.diagAt[len(all)] = len(s.Diagnostics)
	s.id = setIDs.Add(1)
	return s
}

// finalOf is the skill base as a Set shows it: with its status, shadowed
// when win (the first skill of its name; nil when base is the first) is
// set. It is base's last final when that still fits.
func finalOf(base, win *Skill) *Skill {
	status, shadowedBy := base.Status, ""
	lost := win != nil
	switch {
	case lost:
		status, shadowedBy = StatusShadowed, win.Path
	case status == "":
		status = StatusOK
		if len(base.Diagnostics) > 0 {
			status = StatusWarning
		}
	}
	sk := base.final
	if sk == nil || sk.Status != status || sk.ShadowedBy != shadowedBy {
		c := *base
		c.Status, c.ShadowedBy, c.final = status, shadowedBy, nil
		if lost {
			c.Diagnostics = slices.Clone(base.Diagnostics)
			c.Diagnostics.Add(workspace.Warning, c.Path, 0, "skill.shadowed", "skill %q is shadowed by %s", c.Name, win.Path)
		}
		sk = &c
	}
	base.final = sk
	return sk
}

// maxPatch bounds the skills patchSet replaces; past it a new Set is made
// whole.
const maxPatch = 16

// patchSet makes the Set for loaded from prev, the Set made from
// prevLoaded, when they differ in a few skills that kept their names and
// precedence (a reload after skill files changed) and the folder
// diagnostics are the same: those skills are settled again in their
// places, and every other place is taken from prev, which is what newSet
// would give, without walking every skill. It returns nil when it cannot;
// newSet then makes the Set whole.
func (l *Loader) patchSet(prev *Set, prevLoaded []*Skill, prevFolder workspace.Diagnostics, loaded []*Skill, folder workspace.Diagnostics) *Set {
	if prev == nil || prev.diagAt == nil || len(loaded) != len(prevLoaded) || len(loaded) != len(l.memo.sortInv) || !slices.Equal(folder, prevFolder) {
		return nil
	}
	var changed []int // sorted places
	for i := range loaded {
		if loaded[i] == prevLoaded[i] {
			continue
		}
		if len(changed) == maxPatch || loaded[i].Name != prevLoaded[i].Name || loaded[i].rank != prevLoaded[i].rank || loaded[i].Path != prevLoaded[i].Path {
			return nil
		}
		changed = append(changed, l.memo.sortInv[i])
	}
	slices.Sort(changed)
	s := &Set{Skills: slices.Clone(prev.Skills), diagAt: prev.diagAt, from: prev.id, changed: changed, replaced: make([]*Skill, len(changed))}
	for i, k := range changed {
		s.replaced[i] = prev.Skills[k]
		base := loaded[l.memo.sortPerm[k]]
		g := k
		for g > 0 && s.Skills[g-1].Name == base.Name {
			g--
		}
		var win *Skill
		if g < k {
			win = s.Skills[g]
		}
		s.Skills[k] = finalOf(base, win)
		if len(s.Skills[k].Diagnostics) != prev.diagAt[k+1]-prev.diagAt[k] {
			return nil
		}
	}
	// The diagnostics are prev's when the changed skills have the same
	// ones (an edit that fixed or caused no warning): they are shared,
	// clipped so that an append to either Set's copies.
	s.Diagnostics = slices.Clip(prev.Diagnostics)
	for _, k := range changed {
		if !slices.Equal(prev.Diagnostics[prev.diagAt[k]:prev.diagAt[k+1]], s.Skills[k].Diagnostics) {
			s.Diagnostics = slices.Clone(prev.Diagnostics)
			for _, k := range changed {
				copy(s.Diagnostics[prev.diagAt[k]:], s.Skills[k].Diagnostics)
			}
			break
		}
	}
	s.id = setIDs.Add(1)
	l.patches.Add(1)
	return s
}

type sortKey struct {
	name string
	rank int
}

// sorted returns the loaded skills (in load order) sorted by name and, within
// a name, by precedence, stably. The order depends only on the names and
// ranks in load order, so a load with the same ones as the last (a reload
// after a skill's file changed) takes the last order again instead of
// sorting.
func (l *Loader) sorted(loaded []*Skill) []*Skill {
	same := len(loaded) == len(l.memo.sortKeys)
	for i := 0; same && i < len(loaded); i++ {
		same = loaded[i].Name == l.memo.sortKeys[i].name && loaded[i].rank == l.memo.sortKeys[i].rank
	}
	if !same {
		idx := make([]int, len(loaded))
		keys := make([]sortKey, len(loaded))
		for i, sk := range loaded {
			idx[i], keys[i] = i, sortKey{sk.Name, sk.rank}
		}
		sort.SliceStable(idx, func(a, b int) bool {
			x, y := keys[idx[a]], keys[idx[b]]
			if x.name != y.name {
				return x.name < y.name
			}
			return x.rank < y.rank
		})
		inv := make([]int, len(idx))
		for k, i := range idx {
			inv[i] = k
		}
		l.memo.sortKeys, l.memo.sortPerm, l.memo.sortInv = keys, idx, inv
	}
	out := make([]*Skill, len(loaded))
	for k, i := range l.memo.sortPerm {
		out[k] = loaded[i]
	}
	return out
}

// setIDs numbers Sets.
var setIDs atomic.Uint64

// ID is a number no other Set in this process has: a loader that hands
// out the same Set again (nothing changed) hands out the same ID.
func (s *Set) ID() uint64 { return s.id }

// Get returns the skill that answers to name: the winner among skills of
// that name, which may be broken.
func (s *Set) Get(name string) (*Skill, bool) {
	s.byNameOnce.Do(func() {
		s.byName = make(map[string]*Skill, len(s.Skills))
		for _, sk := range s.Skills {
			if _, ok := s.byName[sk.Name]; !ok {
				s.byName[sk.Name] = sk // the first of a name is the winner
			}
		}
	})
	sk, ok := s.byName[name]
	return sk, ok
}

// Usable returns the skills that may appear in a prompt: neither broken nor
// shadowed, sorted by name.
func (s *Set) Usable() []*Skill {
	var out []*Skill
	for _, sk := range s.Skills {
		if sk.usable() {
			out = append(out, sk)
		}
	}
	return out
}

// ByLocation returns the usable skill shown to the model at loc, so that a
// file-reading tool can serve built-in skills, which have no file on disk.
func (s *Set) ByLocation(loc string) (*Skill, bool) {
	for _, sk := range s.Skills {
		if sk.usable() && sk.Location == loc {
			return sk, true
		}
	}
	return nil, false
}

// usableName reports whether a frontmatter name can name a flat skill: it
// must be something a user can type after "/" and that reads as one word in
// a listing. Anything else keeps the file's name, with validate's warning.
func usableName(n string) bool {
	if n == "" || len(n) > MaxNameLen {
		return false
	}
	for _, r := range n {
		if r <= ' ' || r == '/' || r == '\\' || r == 0x7f || r == '<' || r == '>' || r == '&' || r == '"' || r == '\'' {
			return false
		}
	}
	return true
}

// EnvCacheDir names the folder loom keeps files it makes for itself in,
// such as the built-in skills' SKILL.md files; unset, it is loom/ in the
// user's cache folder (os.UserCacheDir). It is the operator's choice:
// loom.yaml cannot move it.
const EnvCacheDir = "LOOM_CACHE_DIR"

// CacheDir is the folder loom keeps its own files in: Options.CacheDir,
// else $LOOM_CACHE_DIR, else loom/ in the user's cache folder. getenv nil
// means os.Getenv.
func CacheDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv(EnvCacheDir); d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("$%s must be an absolute path, not %q", EnvCacheDir, d)
		}
		return filepath.Clean(d), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "loom"), nil
}

// builtinHome opens the cache folder once per Loader; the built-in skills
// are written beneath it, never into the workspace, so a render writes
// nothing in the folder it reads.
func (l *Loader) builtinHome() (*workspace.Workspace, error) {
	if l.builtinFiles.home != nil || l.builtinFiles.err != nil {
		return l.builtinFiles.home, l.builtinFiles.err
	}
	dir := l.opts.CacheDir
	if dir == "" {
		dir, l.builtinFiles.err = CacheDir(l.opts.Getenv)
	}
	if l.builtinFiles.err == nil {
		// The folder itself is made here, not through a door: it is where
		// the door is rooted. What goes inside goes through the door.
		if l.builtinFiles.err = os.MkdirAll(dir, 0o700); l.builtinFiles.err == nil {
			l.builtinFiles.home, l.builtinFiles.err = workspace.Open(dir)
		}
	}
	return l.builtinFiles.home, l.builtinFiles.err
}

// materialize gives a built-in skill a location the agent can read, outside
// the workspace, as nanobot keeps its own skills beside its installed
// package: the file is <cache>/builtin/<hash>/<name>/SKILL.md, where hash is
// the first 12 hex digits of the text's sha256. A file there never changes
// once written (a new text is a new folder), so two loom versions sharing a
// cache never rewrite each other's skill, and it is written (atomically)
// only when missing or different. The prompt shows the absolute path. A
// workspace that is not a folder on disk, or a cache folder that cannot be
// written, gets the skill's text inlined in the prompt instead.
func (l *Loader) materialize(s *Skill) {
	if l.ws.Root() == "" {
		s.Inline = true
		return
	}
	sum := sha256.Sum256([]byte(s.raw))
	rel := path.Join("builtin", hex.EncodeToString(sum[:6]), s.Name, FileName)
	home, err := l.builtinHome()
	if err == nil && l.builtinFiles.written[rel] != s.raw {
		cur, rerr := home.ReadFile(rel)
		if rerr != nil || string(cur) != s.raw {
			err = home.MkdirAll(path.Dir(rel), 0o755)
			if err == nil {
				err = home.WriteFile(rel, []byte(s.raw), 0o644)
			}
		}
	}
	if err != nil {
		s.Inline = true
		s.Diagnostics.Add(workspace.Warning, s.Path, 0, "skill.builtin-write", "could not write the built-in skill to loom's cache folder (%s; set $%s); its text is put in the prompt instead", workspace.RefusalMessage(err), EnvCacheDir)
		return
	}
	l.builtinFiles.written[rel] = s.raw
	s.Location = home.Abs(rel)
}
