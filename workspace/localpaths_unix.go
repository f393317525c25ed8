//go:build unix

package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LocalPaths checks rel with each suffix appended (a database and its
// -wal, -shm and -journal files) as [LocalPath] checks one path, and
// returns the first suffix's path. The folders the paths share are walked
// once, where a LocalPath each walks them again; the answer, and the first
// error in the order given, are what LocalPath would give for each in turn.
func LocalPaths(root, rel string, suffixes ...string) (string, error) {
	return localPaths(root, -1, rel, suffixes, nil)
}

// localPaths is LocalPaths, walking from rootFD when it is a descriptor of
// root (else opening root), and filling in ids, when given (one per
// suffix), with the identity of each file that exists.
func localPaths(root string, rootFD int, rel string, suffixes []string, ids []FileID) (string, error) {
	c, err := writableRel(rel)
	if err != nil || len(suffixes) == 0 {
		return LocalPath(root, rel)
	}
	for _, s := range suffixes {
		cs, err := writableRel(rel + s)
		if err != nil || cs != c+s || strings.ContainsAny(s, `/\`) {
			p, err := localPathsOneByOne(root, rel, suffixes)
			if err == nil && ids != nil {
				// Each was just found not to be a symlink.
				for i, s := range suffixes {
					if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(c+s))); err == nil {
						ids[i] = idOf(fi)
					}
				}
			}
			return p, err
		}
	}
	dir, base := splitRel(c)
	cur := rootFD
	if cur < 0 {
		cur, err = openatRetry(unix.AT_FDCWD, root, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|pathFlag, 0)
		if err != nil {
			return "", &fs.PathError{Op: "open", Path: root, Err: err}
		}
	}
	defer func() {
		if cur != rootFD {
			unix.Close(cur)
		}
	}()
	first := filepath.Join(root, filepath.FromSlash(c+suffixes[0]))
	if dir != "" {
		parts := strings.Split(dir, "/")
		for i, name := range parts {
			at := strings.Join(parts[:i+1], "/")
			var st unix.Stat_t
			diskOps.Add(1)
			err := unix.Fstatat(cur, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			if errors.Is(err, unix.ENOENT) {
				return first, nil // nothing below exists: no path has anything to refuse
			}
			if err != nil {
				return "", &fs.PathError{Op: "lstat", Path: at, Err: err}
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return "", &RefusedError{Path: at, Reason: ErrSymlink}
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return "", &fs.PathError{Op: "open", Path: at, Err: unix.ENOTDIR}
			}
			fd, err := walkOpen(cur, name, unix.O_DIRECTORY|pathFlag, 0)
			if err != nil {
				if errors.Is(err, errSymlinkMet) {
					return "", &RefusedError{Path: at, Reason: ErrSymlink}
				}
				return "", &fs.PathError{Op: "open", Path: at, Err: unwrapName(err, name)}
			}
			if cur != rootFD {
				unix.Close(cur)
			}
			cur = fd
		}
	}
	for i, s := range suffixes {
		var st unix.Stat_t
		diskOps.Add(1)
		err := unix.Fstatat(cur, base+s, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "lstat", Path: c + s, Err: err}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return "", &RefusedError{Path: c + s, Reason: ErrSymlink}
		}
		if ids != nil {
			ids[i] = FileID{Size: st.Size, ModTime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), Ino: uint64(st.Ino), Dev: uint64(st.Dev)}
		}
	}
	return first, nil
}

func localPathsOneByOne(root, rel string, suffixes []string) (string, error) {
	var first string
	for i, s := range suffixes {
		p, err := LocalPath(root, rel+s)
		if err != nil {
			return "", err
		}
		if i == 0 {
			first = p
		}
	}
	return first, nil
}

// LocalIDs checks rel with each suffix appended as [LocalPaths] does, and
// returns the identity of each file, the zero FileID for one that does not
// exist: what a caller needs to tell whether a database changed. While
// [Workspace.Watch] vouches for the names on the way and for the files'
// names in their folder, the answer is given again from memory, with no
// system call, until an event touches one of them.
func (w *Workspace) LocalIDs(rel string, suffixes ...string) ([]FileID, error) {
	if w.fsys != nil {
		return nil, &fs.PathError{Op: "stat", Path: rel, Err: errors.ErrUnsupported}
	}
	k := memoKey{opLocal, rel + "\x00" + strings.Join(suffixes, "\x00")}
	if e, ok := w.cached(k); ok {
		return slices.Clone(e.ids), e.err
	}
	d := w.localDeps(rel, suffixes)
	root, err := w.rootFD()
	if err != nil {
		return nil, err
	}
	ids := make([]FileID, len(suffixes))
	_, err = localPaths(w.root, root, rel, suffixes, ids)
	w.doneRoot(root)
	if err != nil {
		ids = nil
	}
	w.noteIDs(k, ids, err, d)
	return slices.Clone(ids), err
}

// localDeps is what LocalIDs' answer depends on, while watching: each
// folder's name on the way to rel's folder, and each file's name in it. A
// name on the way that is missing, or is not a folder (LocalIDs refuses a
// symlink, whatever it points to), decides the answer by itself. nil means
// "check the disk each time".
func (w *Workspace) localDeps(rel string, suffixes []string) *deps {
	c, err := writableRel(rel)
	if err != nil {
		return nil
	}
	w.mu.Lock()
	watching := w.watcher != nil && !w.distrust
	w.mu.Unlock()
	if !watching {
		return nil
	}
	d := &deps{}
	dir, base := splitRel(c)
	cur := w.root
	if dir != "" {
		for _, name := range strings.Split(dir, "/") {
			if !w.watchFolder(d, cur, name) {
				return nil
			}
			st, err := lstat(filepath.Join(cur, name))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return d
				}
				return nil
			}
			if !st.IsDir() {
				return d
			}
			cur = filepath.Join(cur, name)
		}
	}
	for _, s := range suffixes {
		if !w.watchFolder(d, cur, base+s) {
			return nil
		}
	}
	return d
}
