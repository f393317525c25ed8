package workspace

import (
	"io/fs"

	"github.com/fsnotify/fsnotify"
)

// IDOf is the identity of the file fi describes.
func IDOf(fi fs.FileInfo) FileID { return idOf(fi) }

// DiskOps is how many file-system calls the door has made so far.
func DiskOps() int64 { return diskOps.Load() }

// FailWatches makes adding a watch fail for every folder fail names, until
// the returned func is called.
func FailWatches(fail func(dir string) bool) (restore func()) {
	old := addWatch
	addWatch = func(wt *fsnotify.Watcher, dir string) error {
		if fail(dir) {
			return errFailedWatch
		}
		return old(wt, dir)
	}
	return func() { addWatch = old }
}

var errFailedWatch = fsnotifyErr("watch refused by the test")

type fsnotifyErr string

func (e fsnotifyErr) Error() string { return string(e) }

// InjectWatchErr makes the watcher report err, as if fsnotify had.
func (w *Workspace) InjectWatchErr(err error) {
	w.mu.Lock()
	wt := w.watcher
	w.mu.Unlock()
	w.onError(wt, err)
}
