//go:build unix

package filelock

import "syscall"

// openFlags keep a lock file from being a trap: a symlink in its place is
// refused rather than followed, and a named pipe does not block the open.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
