package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"

	"github.com/loomctx/loom/internal/zerocopy"
)

// DefaultMaxFileSize is the largest file the reader accepts unless
// [WithMaxFileSize] says otherwise.
const DefaultMaxFileSize = 1 << 20

// Sentinel reasons for a refused read. A *RefusedError wraps exactly one.
var (
	ErrOutside    = errors.New("resolves outside the workspace")
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file is too large")
	ErrBinary     = errors.New("binary file (contains a NUL byte)")
	ErrLoop       = errors.New("symlink loop")
	// ErrSymlink refuses a symlink where loom does not follow one: anywhere
	// on the path of a file it writes, or of private data it reads back.
	ErrSymlink = errors.New("is or passes through a symlink, which loom does not follow here")
	// ErrChanged means the file kept changing into something else (a
	// symlink, say) between the look-up and the open.
	ErrChanged = errors.New("changed while being opened")
)

// RefusedError is returned when the door refuses a file. Path is
// workspace-relative.
type RefusedError struct {
	Path   string
	Reason error
	Detail string // extra words for the message, e.g. the size
}

func (e *RefusedError) Error() string {
	msg := e.Reason.Error()
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return QuotePath(e.Path) + ": " + msg
}

func (e *RefusedError) Unwrap() error { return e.Reason }

// Message is the reason alone, for a [Diagnostic].
func (e *RefusedError) Message() string {
	msg := e.Reason.Error()
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

// FileID identifies one version of a file on disk. Two reads that see the same
// FileID see the same bytes, so parsed results can be cached by it.
type FileID struct {
	Size    int64
	ModTime time.Time
	Ino     uint64
	Dev     uint64
}

// File is a text file read through the door: normalised to valid UTF-8, LF
// line endings and no byte-order mark. While a file is unchanged on disk,
// [Workspace.Load] returns the same *File, so callers may cache by pointer.
type File struct {
	Path    string // workspace-relative, slash-separated
	Text    string
	ID      FileID
	Repairs []string // what normalisation changed, e.g. "invalid UTF-8 replaced"
}

// Workspace is an agent's folder. Every file loom reads from it goes through
// [Workspace.Load], which refuses anything whose real path is outside the
// folder. [Workspace.Generation] tells whether any read saw a change, and
// [Workspace.Watch] lets unchanged reads skip the disk altogether. A
// Workspace is safe for concurrent use.
type Workspace struct {
	root    string // absolute, symlinks resolved; "" when backed by fsys
	fsys    fs.FS  // set for embedded examples
	maxSize atomic.Int64
	baseMax int64 // the cap Open was given

	gen    atomic.Uint64 // see [Workspace.Generation]
	writes atomic.Uint64 // see [Workspace.Writes]

	mu   sync.Mutex
	memo map[memoKey]*entry // the last answer to every read, by kind and path

	// Watching (watch.go).
	watcher   *fsnotify.Watcher  // nil when not watching
	done      chan struct{}      // closed when the event goroutine ends
	dirs      map[string]*folder // watched real folders
	distrust  bool               // the watcher failed: check the disk again
	uncovered atomic.Bool        // some answer while watching had to be checked on disk
	linked    atomic.Bool        // a watched walk followed a symlink (see TreeStamp)
	trees     treeStamps         // under mu (see TreeStamp)
	watchErr  error
	subs      map[*subscriber]bool // the change feed's subscribers (feed.go)

	// held is the root's descriptor while a [Workspace.Hold] lasts.
	held struct {
		mu   sync.Mutex
		refs int
		fd   int
	}
}

// Option configures [Open].
type Option func(*Workspace)

// WithMaxFileSize sets the per-file size cap in bytes.
func WithMaxFileSize(n int64) Option {
	return func(w *Workspace) {
		if n > 0 {
			w.maxSize.Store(n)
		}
	}
}

// Open opens the workspace folder dir. It fails if dir does not exist or is
// not a folder.
func Open(dir string, opts ...Option) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("workspace %s: folder does not exist", QuotePath(dir))
		}
		return nil, fmt.Errorf("workspace %s: %w", QuotePath(dir), unwrapPathErr(err))
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", QuotePath(dir), unwrapPathErr(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a folder", QuotePath(dir))
	}
	w := &Workspace{root: real, memo: map[memoKey]*entry{}}
	w.maxSize.Store(DefaultMaxFileSize)
	for _, o := range opts {
		o(w)
	}
	w.baseMax = w.maxSize.Load()
	return w, nil
}

// OpenFS opens a read-only workspace backed by fsys, such as an embedded
// example. It has no symlinks, so only the size, binary and UTF-8 rules apply.
func OpenFS(fsys fs.FS, opts ...Option) *Workspace {
	w := &Workspace{fsys: fsys, memo: map[memoKey]*entry{}}
	w.maxSize.Store(DefaultMaxFileSize)
	for _, o := range opts {
		o(w)
	}
	w.baseMax = w.maxSize.Load()
	return w
}

// Root is the absolute, symlink-free path of the workspace, or "" for a
// workspace backed by an fs.FS.
func (w *Workspace) Root() string { return w.root }

// IsDir reports whether rel exists and is a folder inside the workspace.
func (w *Workspace) IsDir(rel string) bool {
	rel = cleanRel(rel)
	k := memoKey{opIsDir, rel}
	if e, ok := w.cached(k); ok {
		return e.yes
	}
	if w.fsys != nil {
		st, err := fs.Stat(w.fsys, rel)
		return w.noteBool(k, err == nil && st.IsDir(), fixed)
	}
	deps := w.walk(rel, false)
	ok, dir := w.lookUp(rel)
	return w.noteBool(k, ok && dir, deps)
}

// Exists reports whether rel names anything (file or folder) inside the
// workspace.
func (w *Workspace) Exists(rel string) bool {
	rel = cleanRel(rel)
	k := memoKey{opExists, rel}
	if e, ok := w.cached(k); ok {
		return e.yes
	}
	if w.fsys != nil {
		_, err := fs.Stat(w.fsys, rel)
		return w.noteBool(k, err == nil, fixed)
	}
	deps := w.walk(rel, false)
	ok, _ := w.lookUp(rel)
	return w.noteBool(k, ok, deps)
}

// lookUp finds rel through the door, as Load would open it: ok is false
// when it is missing, outside the workspace, or kept changing; dir says
// whether it is a folder. The answer comes from a descriptor opened under
// the root with no symlink followed, never from a stat of a path checked
// beforehand, so a folder swapped for a symlink to outside cannot be seen
// through.
func (w *Workspace) lookUp(rel string) (ok, dir bool) {
	if inside(rel) {
		// No symlink on the way: one look-up.
		dir, err := w.dirBeneath(rel)
		if err == nil {
			return true, dir
		}
		if !errors.Is(err, errSymlinkMet) {
			return false, false
		}
	}
	for try := 0; try < 4; try++ {
		real, err := w.resolve(rel)
		if err != nil {
			return false, false
		}
		dir, err := w.dirBeneath(relTo(w.root, real))
		if err == nil {
			return true, dir
		}
		if !errors.Is(err, errSymlinkMet) {
			return false, false
		}
		// The path changed between resolve and the look-up: again.
	}
	return false, false
}

// ReadDir lists the folder rel, sorted by name. A folder whose real path is
// outside the workspace is refused with a *RefusedError. The caller owns the
// returned slice.
func (w *Workspace) ReadDir(rel string) ([]fs.DirEntry, error) {
	rel = cleanRel(rel)
	k := memoKey{opReadDir, rel}
	e, ok := w.cached(k)
	if ok {
		return slices.Clone(e.list), e.err
	}
	if w.fsys != nil {
		list, err := fs.ReadDir(w.fsys, rel)
		w.noteList(k, list, err, fixed, FileID{}, time.Time{}, time.Time{})
		return list, err
	}
	deps := w.walk(rel, true)
	// Without a watch, the last listing holds while the folder's stat
	// does: adding, removing or renaming an entry changes the folder's
	// modification time (a racy one is listed again, see racyWindow). The
	// stat comes before the listing, so a change in between is seen next
	// time.
	var dir FileID
	var dirChanged time.Time
	if deps == nil {
		if id, ctime, ok := w.statID(rel); ok {
			dir, dirChanged = id, ctime
			if e != nil && e.err == nil && e.dir == dir && e.dirChanged.Equal(ctime) && !racy(dir.ModTime, e.at) {
				return slices.Clone(e.list), nil
			}
		}
	}
	at := time.Now()
	list, err := w.readDir(rel)
	w.noteList(k, list, err, deps, dir, dirChanged, at)
	return list, err
}

func (w *Workspace) readDir(rel string) ([]fs.DirEntry, error) {
	entries, err := w.readDirDirect(rel)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

// Abs returns the absolute path of rel (not resolved), or rel itself for an
// fs.FS-backed workspace.
func (w *Workspace) Abs(rel string) string {
	if w.fsys != nil {
		return cleanRel(rel)
	}
	return filepath.Join(w.root, filepath.FromSlash(cleanRel(rel)))
}

// Load reads the text file rel (slash-separated, relative to the workspace).
// It returns an error wrapping fs.ErrNotExist when there is no such file, and
// a *RefusedError when the door refuses it. An unchanged file is not read
// again: its size, modification time and inode are checked with one stat, or
// not at all while [Workspace.Watch] vouches for its folders.
func (w *Workspace) Load(rel string) (*File, error) {
	rel = cleanRel(rel)
	k := memoKey{opLoad, rel}
	e, ok := w.cached(k)
	if ok {
		return e.file, e.err
	}
	if w.fsys != nil {
		return w.loadFS(k, e)
	}
	if d := w.renewed(e, rel); d != nil {
		// Only the file itself had an event: the folders on the way hold
		// what they held, so they are not walked again. A read that does
		// not go straight through (the file is gone, or a symlink now)
		// is made again the long way.
		at := time.Now()
		if data, id, err := w.readBeneath(rel, rel, w.maxSize.Load()); err == nil {
			f, err := newFile(rel, data, id)
			return w.noteFile(k, f, err, d, at)
		}
	}
	deps := w.walk(rel, false)
	if e != nil && e.file != nil && !racy(e.file.ID.ModTime, e.at) {
		if id, _, ok := w.statID(rel); ok && id == e.file.ID {
			if deps != nil {
				w.noteFile(k, e.file, nil, deps, e.at)
			}
			return e.file, nil
		}
	}
	at := time.Now()
	f, err := w.load(rel)
	return w.noteFile(k, f, err, deps, at)
}

// Read is Load for callers that go on without the file: a missing file gives
// ok == false quietly; a refused or unreadable one also adds a diagnostic.
func (w *Workspace) Read(rel string, diags *Diagnostics) (f *File, ok bool) {
	f, err := w.Load(rel)
	if err == nil {
		for _, r := range f.Repairs {
			diags.Add(Warning, f.Path, 0, "read.repaired", "%s", r)
		}
		return f, true
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	diags.Add(Warning, cleanRel(rel), 0, RefusalCode(err), "%s", RefusalMessage(err))
	return nil, false
}

// RefusalCode is the stable diagnostic code for an error returned by Load.
func RefusalCode(err error) string {
	switch {
	case errors.Is(err, ErrOutside):
		return "read.outside"
	case errors.Is(err, ErrNotRegular):
		return "read.not-regular"
	case errors.Is(err, ErrTooLarge):
		return "read.too-large"
	case errors.Is(err, ErrBinary):
		return "read.binary"
	case errors.Is(err, ErrLoop):
		return "read.loop"
	case errors.Is(err, ErrSymlink):
		return "read.symlink"
	case errors.Is(err, ErrChanged):
		return "read.changed"
	}
	return "read.error"
}

// RefusalMessage is the message part of a diagnostic for an error from Load.
func RefusalMessage(err error) string {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.Message()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func (w *Workspace) load(rel string) (*File, error) {
	if inside(rel) {
		// The common case, a path with no symlink on it, costs one open:
		// then rel is its own real path, and openat2 proves it. Only a
		// symlink met on the way sends the read through resolve.
		data, id, err := w.readBeneath(rel, rel, w.maxSize.Load())
		if err == nil {
			return newFile(rel, data, id)
		}
		if !errors.Is(err, errSymlinkMet) {
			return nil, err
		}
	}
	for try := 0; ; try++ {
		real, err := w.resolve(rel)
		if err != nil {
			return nil, err
		}
		f, err := w.readReal(rel, real)
		if errors.Is(err, errSymlinkMet) {
			// The path changed between resolve and open: look again.
			if try < 3 {
				continue
			}
			return nil, &RefusedError{Path: rel, Reason: ErrChanged}
		}
		return f, err
	}
}

// readReal opens real, the resolved path of rel, relative to the root with
// no symlink followed, so that what is read is what resolve checked. The
// descriptor is checked with fstat (a regular file, within the size cap),
// never the path.
func (w *Workspace) readReal(rel, real string) (*File, error) {
	data, id, err := w.readBeneath(rel, relTo(w.root, real), w.maxSize.Load())
	if err != nil {
		return nil, err
	}
	return newFile(rel, data, id)
}

// readDirDirect lists rel with one open when no symlink is on its path,
// else through resolve.
func (w *Workspace) readDirDirect(rel string) ([]fs.DirEntry, error) {
	if inside(rel) {
		fh, err := w.openIn(rel, rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err == nil {
			defer fh.Close()
			return fh.ReadDir(-1)
		}
		if !errors.Is(err, errSymlinkMet) {
			return nil, err
		}
	}
	real, err := w.resolve(rel)
	if err != nil {
		return nil, err
	}
	return w.readDirReal(rel, real)
}

// inside reports whether the clean relative path rel names something under
// the root by its spelling alone (no "..", not absolute).
func inside(rel string) bool {
	return rel != ".." && !strings.HasPrefix(rel, "../") && !path.IsAbs(rel)
}

// readDirReal lists real, the resolved path of rel, opened relative to the
// root with no symlink followed.
func (w *Workspace) readDirReal(rel, real string) ([]fs.DirEntry, error) {
	fh, err := w.openIn(rel, relTo(w.root, real), os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if errors.Is(err, errSymlinkMet) {
		return nil, &RefusedError{Path: rel, Reason: ErrChanged}
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return fh.ReadDir(-1)
}

// relTo is target relative to root, slash-separated, "" for root itself.
// Both are clean absolute paths with target within root.
func relTo(root, target string) string {
	r, err := filepath.Rel(root, target)
	if err != nil || r == "." {
		return ""
	}
	return filepath.ToSlash(r)
}

// loadFS loads from an fs.FS, which is taken never to change, so every
// answer is kept for good.
func (w *Workspace) loadFS(k memoKey, e *entry) (*File, error) {
	if e != nil {
		return e.file, e.err
	}
	f, err := w.readFS(k.rel)
	return w.noteFile(k, f, err, fixed, time.Time{})
}

func (w *Workspace) readFS(rel string) (*File, error) {
	st, err := fs.Stat(w.fsys, rel)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &RefusedError{Path: rel, Reason: ErrNotRegular, Detail: modeName(st.Mode())}
	}
	if limit := w.maxSize.Load(); st.Size() > limit {
		return nil, &RefusedError{Path: rel, Reason: ErrTooLarge, Detail: fmt.Sprintf("%d bytes; the limit is %d", st.Size(), limit)}
	}
	data, err := fs.ReadFile(w.fsys, rel)
	if err != nil {
		return nil, err
	}
	return newFile(rel, data, FileID{Size: st.Size(), ModTime: st.ModTime()})
}

// Normalize applies the door's text rules to data read from elsewhere (a
// file named on the command line, say): it strips a UTF-8 BOM, turns CRLF
// into LF, replaces invalid UTF-8 with U+FFFD and removes C0 control
// characters other than tab and newline ([StripControls]). It reports what
// it changed.
func Normalize(data []byte) (string, []string) {
	return normalize(data, false)
}

// normalize is Normalize; with owned, data is the caller's own fresh
// buffer, which nothing else holds or changes, and the text may share it
// rather than copy it.
func normalize(data []byte, owned bool) (string, []string) {
	var repairs []string
	if bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")) {
		data = data[3:]
	}
	if bytes.Contains(data, []byte("\r\n")) {
		data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	}
	if !utf8.Valid(data) {
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
		repairs = append(repairs, "invalid UTF-8 replaced with U+FFFD")
	}
	var text string
	if owned && len(data) > 0 {
		text = zerocopy.String(data) // data is never written again
	} else {
		text = string(data)
	}
	if HasControls(text) {
		text = StripControls(text)
		repairs = append(repairs, "control characters removed")
	}
	return text, repairs
}

func newFile(rel string, data []byte, id FileID) (*File, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &RefusedError{Path: rel, Reason: ErrBinary}
	}
	// data is a buffer this read made for itself: the text may keep it.
	text, repairs := normalize(data, true)
	return &File{Path: rel, Text: text, ID: id, Repairs: repairs}, nil
}

// resolve returns the real path of rel and refuses it when that path is
// outside the root. A child whose name merely starts with ".." is fine.
func (w *Workspace) resolve(rel string) (string, error) {
	rel = cleanRel(rel)
	if strings.HasPrefix(rel, "../") || rel == ".." || path.IsAbs(rel) {
		return "", &RefusedError{Path: rel, Reason: ErrOutside}
	}
	abs := filepath.Join(w.root, filepath.FromSlash(rel))
	real, err := evalSymlinks(abs)
	if err != nil {
		if isLoop(err) {
			return "", &RefusedError{Path: rel, Reason: ErrLoop}
		}
		return "", err
	}
	if !Within(w.root, real) {
		return "", &RefusedError{Path: rel, Reason: ErrOutside, Detail: "resolves to a path outside"}
	}
	return real, nil
}

// Within reports whether target is dir itself or inside it. Both must be
// clean absolute paths. Unlike a prefix test on the relative path, a child
// named "..notes" counts as inside.
func Within(dir, target string) bool {
	rel, err := filepath.Rel(dir, target)
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func cleanRel(rel string) string {
	rel = path.Clean(filepath.ToSlash(rel))
	rel = strings.TrimPrefix(rel, "./")
	if rel == "." {
		return ""
	}
	return rel
}

func isLoop(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) && errors.Is(pe.Err, syscall.ELOOP) {
		return true
	}
	return errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links")
}

func idOf(st fs.FileInfo) FileID {
	id := FileID{Size: st.Size(), ModTime: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.Ino = uint64(sys.Ino)
		id.Dev = uint64(sys.Dev)
	}
	return id
}

func modeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// diskOps counts the door's calls to the file system, so tests can tell
// that a read was answered from memory.
var diskOps atomic.Int64

func stat(name string) (fs.FileInfo, error) {
	diskOps.Add(1)
	return os.Stat(name)
}

func lstat(name string) (fs.FileInfo, error) {
	diskOps.Add(1)
	return os.Lstat(name)
}

func readlink(name string) (string, error) {
	diskOps.Add(1)
	return os.Readlink(name)
}

func evalSymlinks(name string) (string, error) {
	diskOps.Add(1)
	return filepath.EvalSymlinks(name)
}
