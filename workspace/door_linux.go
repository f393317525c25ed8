//go:build linux

package workspace

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 turned out to be missing (a kernel before
// 5.6, or a seccomp filter that refuses it); the door then walks.
var noOpenat2 atomic.Bool

// openBeneath opens rel under dirfd with no symlink followed anywhere and no
// way out of dirfd: openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a
// per-component O_NOFOLLOW walk where openat2 is missing.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	diskOps.Add(1)
	if noOpenat2.Load() {
		return walkOpen(dirfd, rel, flags, mode)
	}
	name := rel
	if name == "" {
		name = "."
	}
	extra := openFlags
	if flags&unix.O_PATH != 0 {
		// openat2 refuses O_PATH with any flag it would ignore.
		extra = unix.O_CLOEXEC
	}
	how := &unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | extra),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, name, how)
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR, unix.EAGAIN:
			// EAGAIN: a rename raced the lookup. Someone renaming in a
			// loop must not keep the door spinning: after a few tries,
			// walk instead.
			if tries < 16 {
				continue
			}
			return walkOpen(dirfd, rel, flags, mode)
		case unix.ENOSYS:
			noOpenat2.Store(true)
			return walkOpen(dirfd, rel, flags, mode)
		case unix.ELOOP, unix.EXDEV, unix.ENOTDIR:
			// A symlink or a way out (ENOTDIR: O_DIRECTORY met a
			// symlink): the walk says where.
			return walkOpen(dirfd, rel, flags, mode)
		}
		return -1, err
	}
}

// pathFlag opens the root as a bare handle for lookups.
const pathFlag = unix.O_PATH
