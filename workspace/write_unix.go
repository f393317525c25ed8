//go:build unix

package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/loomctx/loom/internal/atomicfile"
)

// Writes through the door. Every file loom writes in a workspace (session
// files, MEMORY.md, HISTORY.md, .loom/) goes through these methods: the path
// is relative to the root, may not leave it, and may not pass through a
// symlink anywhere, not even one pointing inside: private data is written
// where its name says, or not at all. The methods open the folder by
// descriptor, one component at a time (or with openat2), so a symlink
// swapped in during the write cannot redirect it.
//
// Private data is created 0600, its folders 0700: pass those perms.

// MaxFileSizeCeiling bounds what [Workspace.SetMaxFileSize] accepts: a
// workspace's own loom.yaml may raise the cap, but not without limit.
const MaxFileSizeCeiling = 64 << 20

// SetMaxFileSize changes the per-file size cap (loom.yaml's max_file_size).
// n <= 0 restores the cap [Open] was given ([WithMaxFileSize], else
// [DefaultMaxFileSize]); n is clamped to
// [MaxFileSizeCeiling]. Earlier answers are forgotten, so a file refused as
// too large can be read once the cap is raised, and the other way round.
func (w *Workspace) SetMaxFileSize(n int64) {
	if n <= 0 {
		n = w.baseMax
	}
	n = min(n, MaxFileSizeCeiling)
	if w.maxSize.Swap(n) == n {
		return
	}
	w.mu.Lock()
	clear(w.memo)
	w.bumpAll()
	w.mu.Unlock()
	w.gen.Add(1)
}

// MaxFileSize is the per-file size cap in bytes: reads refuse larger files,
// and [Workspace.WriteFile] refuses to write one, so loom never writes a
// file it would not read back.
func (w *Workspace) MaxFileSize() int64 { return w.maxSize.Load() }

// ReadFile reads rel as it is on disk, bytes unchanged, bypassing the
// caches: for a writer's read-modify-write. Unlike [Workspace.Load] it
// follows no symlink at all. The file must be regular and within
// [Workspace.MaxFileSize].
func (w *Workspace) ReadFile(rel string) ([]byte, error) {
	rel, err := writableRel(rel)
	if err != nil {
		return nil, err
	}
	data, _, err := w.readBeneath(rel, rel, w.maxSize.Load())
	return data, w.refuseSymlink(rel, err)
}

// OpenFile opens rel with flag and perm, like os.OpenFile, following no
// symlink anywhere on the path. The opened file must be a regular file (or
// a folder, when asked for with O_DIRECTORY); anything else is refused
// after the open, by fstat, so a named pipe never blocks. Use it for files
// that are streamed or locked, such as session files.
func (w *Workspace) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	rel, err := writableRel(rel)
	if err != nil {
		return nil, err
	}
	fh, err := w.openIn(rel, rel, flag, perm)
	if err != nil {
		return nil, w.refuseSymlink(rel, err)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() && !(st.IsDir() && flag&unix.O_DIRECTORY != 0) {
		fh.Close()
		return nil, &RefusedError{Path: rel, Reason: ErrNotRegular, Detail: modeName(st.Mode())}
	}
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		w.forget(rel)
	}
	return fh, nil
}

// WriteFile replaces rel with data atomically: a temporary file in the same
// folder is written, synced and renamed over rel, so a reader or a crash
// sees the old file or the new one, never a mix. The folder must exist
// (see [Workspace.MkdirAll]). A new file gets perm; an existing one keeps
// its permissions, narrowed to perm (a 0644 file written with 0600 becomes
// 0600; nothing is ever widened). Data larger than [Workspace.MaxFileSize]
// is refused.
func (w *Workspace) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	return w.WriteFileLimit(rel, data, perm, w.maxSize.Load())
}

// WriteFileLimit is [Workspace.WriteFile] with its own size cap instead of
// max_file_size; limit <= 0 means none. It is for files loom does not read
// back through [Workspace.Load], such as session files, which have a cap
// of their own.
func (w *Workspace) WriteFileLimit(rel string, data []byte, perm fs.FileMode, limit int64) error {
	rel, err := writableRel(rel)
	if err != nil {
		return err
	}
	if limit > 0 && int64(len(data)) > limit {
		return &RefusedError{Path: rel, Reason: ErrTooLarge, Detail: fmt.Sprintf("writing %d bytes; the limit (max_file_size) is %d", len(data), limit)}
	}
	dir, base := splitRel(rel)
	dfd, err := w.openDir(rel, dir)
	if err != nil {
		return err
	}
	defer dfd.Close()
	var st unix.Stat_t
	switch err := unix.Fstatat(int(dfd.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &RefusedError{Path: rel, Reason: ErrSymlink}
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &RefusedError{Path: rel, Reason: ErrNotRegular, Detail: modeName(fileModeType(uint32(st.Mode)))}
	case err == nil:
		perm &= fs.FileMode(uint32(st.Mode)).Perm()
	case !errors.Is(err, unix.ENOENT):
		return &fs.PathError{Op: "write", Path: rel, Err: err}
	}
	if err := atomicfile.WriteFileAt(int(dfd.Fd()), base, data, perm); err != nil {
		return fmt.Errorf("%s: %w", QuotePath(rel), unwrapName(err, base))
	}
	w.forget(rel)
	return nil
}

// CreateFile writes rel only if nothing exists there yet, and reports
// whether it did; an existing file (or symlink) is kept as it is. The bytes
// go to a synced temporary file that is then linked to rel, so no reader
// sees a half-written file. The folder must exist. It is how starter files
// are laid down.
func (w *Workspace) CreateFile(rel string, data []byte, perm fs.FileMode) (created bool, err error) {
	rel, err = writableRel(rel)
	if err != nil {
		return false, err
	}
	dir, base := splitRel(rel)
	dfd, err := w.openDir(rel, dir)
	if err != nil {
		return false, err
	}
	defer dfd.Close()
	created, err = atomicfile.CreateAt(int(dfd.Fd()), base, data, perm)
	if err != nil {
		return false, fmt.Errorf("%s: %w", QuotePath(rel), unwrapName(err, base))
	}
	if created {
		w.forget(rel)
	}
	return created, nil
}

// AppendFile adds data to the end of rel, creating it with perm if needed,
// in one write on a descriptor opened with O_APPEND|O_NOFOLLOW, so that
// concurrent appenders never interleave their bytes. The folder must exist.
// It does not sync, and does not apply the size cap (a log grows).
func (w *Workspace) AppendFile(rel string, data []byte, perm fs.FileMode) error {
	rel, err := writableRel(rel)
	if err != nil {
		return err
	}
	dir, base := splitRel(rel)
	dfd, err := w.openDir(rel, dir)
	if err != nil {
		return err
	}
	defer dfd.Close()
	if err := atomicfile.AppendAt(int(dfd.Fd()), base, data, perm); err != nil {
		if errors.Is(err, unix.ELOOP) {
			return &RefusedError{Path: rel, Reason: ErrSymlink}
		}
		if errors.Is(err, unix.ENXIO) {
			return &RefusedError{Path: rel, Reason: ErrNotRegular, Detail: "a named pipe"}
		}
		return fmt.Errorf("%s: %w", QuotePath(rel), unwrapName(err, base))
	}
	w.forget(rel)
	return nil
}

// MkdirAll creates the folder rel and any missing parents with perm (0700
// for private data). Existing folders are left as they are. A symlink
// anywhere on the way is refused.
func (w *Workspace) MkdirAll(rel string, perm fs.FileMode) error {
	rel, err := writableRel(rel)
	if err != nil {
		return err
	}
	root, err := w.openRoot()
	if err != nil {
		return err
	}
	cur := root
	defer func() { unix.Close(cur) }()
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		at := strings.Join(parts[:i+1], "/")
		if err := unix.Mkdirat(cur, c, uint32(perm.Perm())); err != nil && err != unix.EEXIST {
			return &fs.PathError{Op: "mkdir", Path: at, Err: err}
		}
		fd, err := walkOpen(cur, c, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			if errors.Is(err, errSymlinkMet) {
				return &RefusedError{Path: at, Reason: ErrSymlink}
			}
			return &fs.PathError{Op: "mkdir", Path: at, Err: unwrapName(err, c)}
		}
		unix.Close(cur)
		cur = fd
	}
	w.forget(rel)
	return nil
}

// Remove removes the file (or empty folder) rel. A symlink at rel is
// removed itself; one on the way to it is refused. A missing file is not
// an error.
func (w *Workspace) Remove(rel string) error {
	rel, err := writableRel(rel)
	if err != nil {
		return err
	}
	dir, base := splitRel(rel)
	dfd, err := w.openDir(rel, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer dfd.Close()
	err = unix.Unlinkat(int(dfd.Fd()), base, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		err = unix.Unlinkat(int(dfd.Fd()), base, unix.AT_REMOVEDIR)
	}
	w.forget(rel)
	if err != nil && err != unix.ENOENT {
		return &fs.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

// LocalPath returns the absolute path of rel for a library that needs a
// path rather than a descriptor (SQLite, say), after checking that no
// existing component of it is a symlink and that it stays inside the
// workspace. Components that do not exist yet are fine: create them with
// [Workspace.MkdirAll] first to close the window in which someone else
// could.
func (w *Workspace) LocalPath(rel string) (string, error) {
	if w.fsys != nil {
		return "", &fs.PathError{Op: "open", Path: rel, Err: errors.ErrUnsupported}
	}
	return LocalPath(w.root, rel)
}

// LocalPath is [Workspace.LocalPath] for a workspace folder root (an
// absolute path, as [Workspace.Root] gives) that is not open as a
// Workspace.
func LocalPath(root, rel string) (string, error) {
	rel, err := writableRel(rel)
	if err != nil {
		return "", err
	}
	cur, err := openatRetry(unix.AT_FDCWD, root, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|pathFlag, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { unix.Close(cur) }()
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		at := strings.Join(parts[:i+1], "/")
		var st unix.Stat_t
		err := unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			break
		}
		if err != nil {
			return "", &fs.PathError{Op: "lstat", Path: at, Err: err}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return "", &RefusedError{Path: at, Reason: ErrSymlink}
		}
		if i == len(parts)-1 {
			break
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return "", &fs.PathError{Op: "open", Path: at, Err: unix.ENOTDIR}
		}
		fd, err := walkOpen(cur, c, unix.O_DIRECTORY|pathFlag, 0)
		if err != nil {
			if errors.Is(err, errSymlinkMet) {
				return "", &RefusedError{Path: at, Reason: ErrSymlink}
			}
			return "", &fs.PathError{Op: "open", Path: at, Err: unwrapName(err, c)}
		}
		unix.Close(cur)
		cur = fd
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// openDir opens the folder dir ("" for the root) on the way to rel, with no
// symlink followed.
func (w *Workspace) openDir(rel, dir string) (*os.File, error) {
	fh, err := w.openIn(dir, dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		var se *symlinkError
		if errors.As(err, &se) {
			return nil, &RefusedError{Path: rel, Reason: ErrSymlink, Detail: "at " + QuotePath(se.at)}
		}
		if errors.Is(err, errSymlinkMet) {
			return nil, &RefusedError{Path: rel, Reason: ErrSymlink}
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op, pe.Path = "write", rel
		}
		return nil, err
	}
	return fh, nil
}

// refuseSymlink turns a symlink met while opening rel into a *RefusedError.
func (w *Workspace) refuseSymlink(rel string, err error) error {
	if err == nil || !errors.Is(err, errSymlinkMet) {
		return err
	}
	var se *symlinkError
	if errors.As(err, &se) && se.at != rel {
		return &RefusedError{Path: rel, Reason: ErrSymlink, Detail: "at " + QuotePath(se.at)}
	}
	return &RefusedError{Path: rel, Reason: ErrSymlink}
}

// forget drops the remembered answers about rel and its folder, so this
// process sees its own write at once, watching or not. Only answers some
// read depended on are dropped, and only then does Generation rise.
func (w *Workspace) forget(rel string) {
	w.writes.Add(1)
	dir, _ := splitRel(rel)
	w.mu.Lock()
	w.trees.bump(rel)
	dropped := false
	for k := range w.memo {
		if k.rel == rel || strings.HasPrefix(k.rel, rel+"/") || (k.rel == dir && k.op != opLoad) {
			delete(w.memo, k)
			dropped = true
		}
	}
	w.mu.Unlock()
	if dropped {
		// Someone read what changed. A write nobody read (a session
		// append) leaves Generation, and so cached renders, alone.
		w.gen.Add(1)
	}
}

// writableRel cleans rel and refuses a path that leaves the workspace or
// names the root itself.
func writableRel(rel string) (string, error) {
	c := cleanRel(rel)
	if c == "" || c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c) || filepath.IsAbs(rel) {
		return "", &RefusedError{Path: rel, Reason: ErrOutside}
	}
	return c, nil
}

func splitRel(rel string) (dir, base string) {
	dir, base = path.Split(rel)
	return strings.TrimSuffix(dir, "/"), base
}

// unwrapName drops a leading "name: " that a lower layer put in err, since
// the caller names the whole path.
func unwrapName(err error, name string) error {
	if s := err.Error(); strings.HasPrefix(s, name+": ") {
		if u := errors.Unwrap(err); u != nil {
			return u
		}
	}
	return err
}

func fileModeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR, unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
