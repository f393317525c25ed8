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
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The confined door: every file the workspace opens is opened relative to a
// descriptor of its root, one name at a time or with openat2, so that a
// symlink swapped in between a check and the open can never lead outside.

// errSymlinkMet means the open met a symlink (or a path leaving the root)
// where none may be.
var errSymlinkMet = errors.New("met a symlink")

// openFlags are added to every open: no controlling terminal, no descriptor
// leaking into children, and O_NONBLOCK so that opening a named pipe never
// waits for a writer.
const openFlags = unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK

// walkOpen opens rel (slash-separated, clean, relative; "" is dirfd itself)
// under dirfd one component at a time with O_NOFOLLOW, so no symlink is
// followed anywhere on the way. flags apply to the last component; the
// folders on the way are opened as folders. A symlink met on the way gives
// a *symlinkError naming the prefix where it was met.
func walkOpen(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if rel == "" {
		rel = "."
	}
	parts := strings.Split(rel, "/")
	cur := dirfd
	closeCur := func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}
	for i, c := range parts {
		last := i == len(parts)-1
		fl := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | openFlags
		var m uint32
		if last {
			fl = flags | unix.O_NOFOLLOW | openFlags
			m = mode
		}
		if c == ".." {
			closeCur()
			return -1, errSymlinkMet
		}
		fd, err := openatRetry(cur, c, fl, m)
		if err != nil {
			if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EMLINK {
				var st unix.Stat_t
				if unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					closeCur()
					return -1, &symlinkError{at: strings.Join(parts[:i+1], "/")}
				}
			}
			closeCur()
			return -1, err
		}
		closeCur()
		cur = fd
	}
	return cur, nil
}

// symlinkError says which prefix of a path was a symlink.
type symlinkError struct{ at string }

func (e *symlinkError) Error() string { return QuotePath(e.at) + " is a symlink" }
func (e *symlinkError) Unwrap() error { return errSymlinkMet }

func openatRetry(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openRoot opens the workspace root; the caller closes it. It is not kept
// open beyond a [Workspace.Hold]: a kernel keeps a folder's watch from
// reporting its removal while any descriptor of it is open.
func (w *Workspace) openRoot() (int, error) {
	fd, err := openatRetry(unix.AT_FDCWD, w.root, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|pathFlag, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: w.root, Err: err}
	}
	return fd, nil
}

// rootFD gives a descriptor of the root for one operation: the held one
// while a [Workspace.Hold] lasts, else a new one. The caller hands it back
// with doneRoot.
func (w *Workspace) rootFD() (int, error) {
	w.held.mu.Lock()
	if w.held.refs > 0 {
		w.held.refs++
		fd := w.held.fd
		w.held.mu.Unlock()
		return fd, nil
	}
	w.held.mu.Unlock()
	return w.openRoot()
}

// doneRoot hands back a descriptor rootFD gave.
func (w *Workspace) doneRoot(fd int) {
	w.held.mu.Lock()
	if w.held.refs > 0 && fd == w.held.fd {
		w.held.refs--
		if w.held.refs == 0 {
			w.held.fd = -1
			w.held.mu.Unlock()
			unix.Close(fd)
			return
		}
		w.held.mu.Unlock()
		return
	}
	w.held.mu.Unlock()
	unix.Close(fd)
}

// Hold keeps one descriptor of the root open until release is called, so
// that a batch of reads (a folder of skills, say) opens the root once
// rather than once per file. Every read still goes through the door as it
// would without it: the descriptor is a bare O_PATH handle, opened with no
// symlink followed, and each file is opened beneath it with openat2 (or
// the O_NOFOLLOW walk). Holds nest and may overlap across goroutines; the
// descriptor is closed when the last one is released. For a workspace
// backed by an fs.FS, or when the root cannot be opened, it does nothing.
func (w *Workspace) Hold() (release func()) {
	if w.fsys != nil {
		return func() {}
	}
	w.held.mu.Lock()
	if w.held.refs == 0 {
		fd, err := w.openRoot()
		if err != nil {
			w.held.mu.Unlock()
			return func() {}
		}
		w.held.fd = fd
	}
	w.held.refs++
	fd := w.held.fd
	w.held.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { w.doneRoot(fd) }) }
}

// openIn opens relReal (clean, slash-separated, relative to the root) with
// no symlink followed and no way out of the root. rel is the name errors
// give. A symlink met on the way gives an error wrapping errSymlinkMet.
func (w *Workspace) openIn(rel, relReal string, flags int, perm fs.FileMode) (*os.File, error) {
	if w.fsys != nil {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: errors.ErrUnsupported}
	}
	root, err := w.rootFD()
	if err != nil {
		return nil, err
	}
	defer w.doneRoot(root)
	fd, err := openBeneath(root, relReal, flags, uint32(perm.Perm()))
	if err != nil {
		var se *symlinkError
		if errors.As(err, &se) || errors.Is(err, errSymlinkMet) {
			return nil, err
		}
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(w.root, filepath.FromSlash(relReal))), nil
}

// readBeneath reads relReal under the root with no symlink followed, on a
// bare descriptor: one open, one fstat of the descriptor (a regular file
// within limit), reads into a buffer of the file's size, one close. rel is
// the name errors give.
func (w *Workspace) readBeneath(rel, relReal string, limit int64) ([]byte, FileID, error) {
	if w.fsys != nil {
		return nil, FileID{}, &fs.PathError{Op: "open", Path: rel, Err: errors.ErrUnsupported}
	}
	root, err := w.rootFD()
	if err != nil {
		return nil, FileID{}, err
	}
	fd, err := openBeneath(root, relReal, unix.O_RDONLY, 0)
	w.doneRoot(root)
	if err != nil {
		var se *symlinkError
		if errors.As(err, &se) || errors.Is(err, errSymlinkMet) {
			return nil, FileID{}, err
		}
		return nil, FileID{}, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, FileID{}, &fs.PathError{Op: "fstat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, FileID{}, &RefusedError{Path: rel, Reason: ErrNotRegular, Detail: modeName(fileModeType(uint32(st.Mode)))}
	}
	if st.Size > limit {
		return nil, FileID{}, &RefusedError{Path: rel, Reason: ErrTooLarge, Detail: fmt.Sprintf("%d bytes; the limit is %d", st.Size, limit)}
	}
	id := FileID{Size: st.Size, ModTime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), Ino: uint64(st.Ino), Dev: uint64(st.Dev)}
	// One byte more than the size finds a file that grew since the fstat.
	buf := make([]byte, st.Size+1)
	n := 0
	for {
		if n == len(buf) {
			if int64(len(buf)) > limit {
				return nil, FileID{}, &RefusedError{Path: rel, Reason: ErrTooLarge, Detail: fmt.Sprintf("more than %d bytes", limit)}
			}
			buf = append(buf, make([]byte, min(int64(len(buf)), limit+1-int64(len(buf))))...)
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, FileID{}, &fs.PathError{Op: "read", Path: rel, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
		if n == int(st.Size) && n < len(buf) {
			// A short read that ends where the fstat said the file
			// ends: this is the end, and asking once more to hear so
			// would cost a system call per file.
			break
		}
	}
	if int64(n) > limit {
		return nil, FileID{}, &RefusedError{Path: rel, Reason: ErrTooLarge, Detail: fmt.Sprintf("more than %d bytes", limit)}
	}
	return buf[:n], id, nil
}

// dirBeneath looks relReal up under the root with no symlink followed and
// says whether it is a folder: the folder holding it is opened through the
// door, and the last name is looked at with fstatat(AT_SYMLINK_NOFOLLOW)
// relative to that descriptor, so nothing is opened outside and the
// answer is about what the door would open. A symlink on the way, or at the
// end, gives an error wrapping errSymlinkMet.
func (w *Workspace) dirBeneath(relReal string) (bool, error) {
	root, err := w.rootFD()
	if err != nil {
		return false, err
	}
	defer w.doneRoot(root)
	var st unix.Stat_t
	if relReal == "" {
		diskOps.Add(1)
		err = unix.Fstat(root, &st)
	} else {
		dirfd := root
		dir, base := path.Split(relReal)
		if dir != "" {
			dirfd, err = openBeneath(root, strings.TrimSuffix(dir, "/"), unix.O_RDONLY|unix.O_DIRECTORY|pathFlag, 0)
			if err != nil {
				return false, err
			}
			defer unix.Close(dirfd)
		}
		diskOps.Add(1)
		for {
			err = unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
			if err != unix.EINTR {
				break
			}
		}
	}
	if err != nil {
		return false, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return false, &symlinkError{at: relReal}
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}
