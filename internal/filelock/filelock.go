// Package filelock holds an advisory lock on a file across processes, so
// that one read-modify-write of a session, of the memory files or of any
// other shared file happens at a time. It wraps github.com/gofrs/flock
// (flock(2) on Unix, LockFileEx on Windows): the lock belongs to an open
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
	"time"

	"github.com/gofrs/flock"
)

// DefaultWait is how long Acquire waits for a busy lock when the caller
// gives no wait.
const DefaultWait = 30 * time.Second

// poll is how often a busy lock is tried again.
const poll = 20 * time.Millisecond

// Lock is one held lock. Release it exactly once.
type Lock struct {
	f    *flock.Flock
	path string
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
	f := open(path)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ok, err := f.TryLockContext(wctx, poll)
	if err == nil && ok {
		return held(f, path), nil
	}
	f.Close()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", path, ctx.Err())
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return nil, &BusyError{Path: path, Holder: holder(path), Waited: time.Since(start)}
}

// Try takes the lock at path if it is free, without waiting. A busy lock
// gives a *BusyError.
func Try(path string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f := open(path)
	ok, err := f.TryLock()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		f.Close()
		return nil, &BusyError{Path: path, Holder: holder(path)}
	}
	return held(f, path), nil
}

func open(path string) *flock.Flock {
	return flock.New(path, flock.SetPermissions(0o600), flock.SetFlag(os.O_CREATE|os.O_RDONLY|openFlags))
}

// held records this process as the holder. The note is best effort: the
// lock itself is the kernel's, not the file's content.
func held(f *flock.Flock, path string) *Lock {
	note := fmt.Sprintf("pid %d (%s)\n", os.Getpid(), filepath.Base(os.Args[0]))
	if w, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|openFlags, 0); err == nil {
		w.WriteString(note)
		w.Close()
	}
	return &Lock{f: f, path: path}
}

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
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Unlock()
	l.f.Close()
	l.f = nil
	return err
}

// For is the conventional lock file of a guarded file: its path plus
// ".lock".
func For(path string) string { return path + ".lock" }
