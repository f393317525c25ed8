//go:build unix

package session

import "syscall"

// openFlags: a symlink in place of a session file is refused rather than
// followed, and a named pipe does not block the open.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
