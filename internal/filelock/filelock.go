// Package filelock holds an advisory lock on a file across processes, so
// that one read-modify-write of a session, of the memory files or of any
// other shared file happens at a time. It takes flock(2) on Unix (with
// plain system calls: open, flock, one pwrite of the note, close) and
// github.com/gofrs/flock's LockFileEx elsewhere: the lock belongs to an open
// file, so two locks on one path conflict in one process as well as in
// two, and the kernel drops it when the holder dies.
//
// The lock lives in its own small file (by convention the guarded file's
// name plus ".lock"), never in the guarded file: that one is replaced by
// rename, which would leave a lock on a file nobody reads any more. The
// holder writes its process id and command into the lock file, so a
// writer that gives up can say who holds it.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultWait is how long Acquire waits for a busy lock when the caller
// gives no wait.
const DefaultWait = 30 * time.Second

// poll is how often a busy lock is tried again.
const poll = 20 * time.Millisecond

// Lock is one held lock. Release it exactly once.
type Lock struct {
	h    handle
	path string
}

// handle is an open lock file: the kernel's lock is taken and dropped on
// it (lock_unix.go, lock_other.go).
type handle interface {
	// try takes the lock without waiting: false when another holds it.
	try() (bool, error)
	// note writes the holder's note into the file, best effort.
	note(string)
	// release drops the lock and closes the file.
	release() error
}

// BusyError says a lock could not be taken in time.
type BusyError struct {
	// Path is the lock file.
	Path string
	// Holder describes the process holding it, "" when unknown.
	Holder string
	// Waited is how long the caller waited.
	Waited time.Duration
}

func (e *BusyError) Error() string {
	who := "another process"
	if e.Holder != "" {
		who = e.Holder
	}
	if e.Waited <= 0 {
		return fmt.Sprintf("%s is locked by %s", e.Path, who)
	}
	return fmt.Sprintf("%s is still locked by %s after waiting %s; try again when it is done",
		e.Path, who, e.Waited.Round(time.Millisecond))
}

// ErrBusy is matched by errors.Is for every *BusyError.
var ErrBusy = errors.New("lock is busy")

// Is reports target == ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Acquire takes the lock at path, creating the file (0600) and its folder
// (0700) if needed. It waits up to wait (DefaultWait when wait <= 0) or
// until ctx ends; then it returns a *BusyError naming the holder.
func Acquire(ctx context.Context, path string, wait time.Duration) (*Lock, error) {
	return acquire(ctx, path, wait, true)
}

// AcquireExisting is [Acquire] for a lock whose folder exists: the folder
// is not made, and a missing one gives an error matching fs.ErrNotExist.
// It is for callers that make their folders through checks of their own
// (a workspace's door), which a plain MkdirAll here would bypass.
func AcquireExisting(ctx context.Context, path string, wait time.Duration) (*Lock, error) {
	return acquire(ctx, path, wait, false)
}

func acquire(ctx context.Context, path string, wait time.Duration, mkdir bool) (*Lock, error) {
	if wait <= 0 {
		wait = DefaultWait
	}
	if mkdir {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
	h, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	start := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		if ctx.Err() != nil {
			h.release()
			return nil, fmt.Errorf("%s: %w", path, ctx.Err())
		}
		ok, err := h.try()
		if err != nil {
			h.release()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return held(h, path), nil
		}
		select {
		case <-ctx.Done():
			h.release()
			return nil, fmt.Errorf("%s: %w", path, ctx.Err())
		case <-deadline.C:
			h.release()
			return nil, &BusyError{Path: path, Holder: holder(path), Waited: time.Since(start)}
		case <-time.After(poll):
		}
	}
}

// Try takes the lock at path if it is free, without waiting. A busy lock
// gives a *BusyError.
func Try(path string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	h, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	ok, err := h.try()
	if err != nil {
		h.release()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		h.release()
		return nil, &BusyError{Path: path, Holder: holder(path)}
	}
	return held(h, path), nil
}

// held records this process as the holder. The note is best effort: the
// lock itself is the kernel's, not the file's content.
func held(h handle, path string) *Lock {
	h.note(ownNote())
	return &Lock{h: h, path: path}
}

// ownNote is this process's holder note, one line.
var ownNote = sync.OnceValue(func() string {
	return fmt.Sprintf("pid %d (%s)\n", os.Getpid(), filepath.Base(os.Args[0]))
})

// holder reads the holder's note, bounded and on one line.
func holder(path string) string {
	r, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return ""
	}
	defer r.Close()
	buf := make([]byte, 200)
	n, _ := r.Read(buf)
	s := strings.TrimSpace(string(buf[:n]))
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// Path is the lock file.
func (l *Lock) Path() string { return l.path }

// Release drops the lock. The lock file stays: removing it would let a
// waiter lock a file that a third process then recreates.
func (l *Lock) Release() error {
	if l == nil || l.h == nil {
		return nil
	}
	err := l.h.release()
	l.h = nil
	return err
}

// For is the conventional lock file of a guarded file: its path plus
// ".lock".
func For(path string) string { return path + ".lock" }
