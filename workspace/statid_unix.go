//go:build unix

package workspace

import (
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// statID is the identity of the file at rel (symlinks followed), for
// validating a cached answer without reading it, with its status change
// time, which no program can set back (a folder moved away and linked back
// keeps its identity but not that time). While a [Workspace.Hold]
// lasts it is one fstatat relative to the held root, with no allocation
// and a shorter walk than the absolute path's; otherwise a stat of the
// absolute path.
func (w *Workspace) statID(rel string) (FileID, time.Time, bool) {
	w.held.mu.Lock()
	if w.held.refs == 0 {
		w.held.mu.Unlock()
		st, err := stat(filepath.Join(w.root, filepath.FromSlash(rel)))
		if err != nil {
			return FileID{}, time.Time{}, false
		}
		var ctime time.Time
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			ctime = time.Unix(int64(sys.Ctim.Sec), int64(sys.Ctim.Nsec))
		}
		return idOf(st), ctime, true
	}
	w.held.refs++
	fd := w.held.fd
	w.held.mu.Unlock()
	defer w.doneRoot(fd)
	var st unix.Stat_t
	diskOps.Add(1)
	for {
		err := unix.Fstatat(fd, rel, &st, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return FileID{}, time.Time{}, false
		}
		break
	}
	id := FileID{Size: st.Size, ModTime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), Ino: uint64(st.Ino), Dev: uint64(st.Dev)}
	return id, time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)), true
}
