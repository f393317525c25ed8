//go:build unix

package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// WriteFileAt is [WriteFile] relative to an open folder: name (one path
// component) in the folder dirfd is replaced by data. The temporary file
// is created with O_EXCL|O_NOFOLLOW in the same folder, written, given perm,
// synced and renamed over name; then the folder is synced. The caller
// decides perm (WriteFileAt does not look at an existing file) and has
// already checked that name is not a symlink: rename replaces a symlink
// itself, never what it points to, so even a race there writes nothing
// outside the folder.
func WriteFileAt(dirfd int, name string, data []byte, perm fs.FileMode) (err error) {
	tmp, err := writeTemp(dirfd, name, data, perm)
	if err != nil {
		return err
	}
	if err = unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("%s: rename: %w", name, err)
	}
	return syncDirFD(dirfd, name)
}

// CreateAt writes name in the folder dirfd only if nothing exists at name,
// and reports whether it did. The data goes to a synced temporary file that
// is then linked to name, which fails if the name exists, so an existing
// file (or one that appears meanwhile) is kept, and no reader sees a
// half-written file. Where the file system has no hard links, a rename
// with RENAME_NOREPLACE does the same; failing that, a check of the name
// followed by a rename, which leaves a short window.
func CreateAt(dirfd int, name string, data []byte, perm fs.FileMode) (created bool, err error) {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return false, nil
	}
	tmp, err := writeTemp(dirfd, name, data, perm)
	if err != nil {
		return false, err
	}
	defer unix.Unlinkat(dirfd, tmp, 0) // after a link the name is only an extra one
	err = unix.Linkat(dirfd, tmp, dirfd, name, 0)
	if err == unix.EPERM || err == unix.EXDEV || err == unix.EMLINK || err == unix.ENOTSUP || err == unix.ENOSYS {
		err = renameNoReplace(dirfd, tmp, name)
	}
	if err == unix.EEXIST {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return true, syncDirFD(dirfd, name)
}

// writeTemp writes data, with perm, to a new synced temporary file beside
// name in dirfd and returns its name.
func writeTemp(dirfd int, name string, data []byte, perm fs.FileMode) (tmp string, err error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp = "." + name + ".tmp-" + hex.EncodeToString(rnd[:])
	fd, err := openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", fmt.Errorf("%s: create a temporary file: %w", name, err)
	}
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
		if err != nil {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	for rest := data; len(rest) > 0; {
		n, werr := unix.Write(fd, rest)
		if werr == unix.EINTR {
			continue
		}
		if werr != nil {
			return "", fmt.Errorf("%s: %w", name, werr)
		}
		rest = rest[n:]
	}
	if err = unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if err = unix.Fsync(fd); err != nil {
		return "", fmt.Errorf("%s: sync: %w", name, err)
	}
	cerr := unix.Close(fd)
	fd = -1
	if cerr != nil {
		return "", fmt.Errorf("%s: %w", name, cerr)
	}
	return tmp, nil
}

// syncDirFD makes a new name in dirfd durable. Some systems cannot sync a
// folder; that is not worth failing a write for.
func syncDirFD(dirfd int, name string) error {
	if err := unix.Fsync(dirfd); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EBADF) {
		return fmt.Errorf("%s: sync the folder: %w", name, err)
	}
	return nil
}

// AppendAt is [Append] relative to an open folder, with O_NOFOLLOW: a
// symlink at name is refused (the error is ELOOP), and so is anything that
// is not a regular file.
func AppendAt(dirfd int, name string, data []byte, perm fs.FileMode) error {
	fd, err := openat(dirfd, name, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s: not a regular file", name)
	}
	for {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n != len(data) {
			return fmt.Errorf("%s: short append (%d of %d bytes)", name, n, len(data))
		}
		return nil
	}
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// checkAndRename is the last resort of CreateAt: a name that appears
// between the check and the rename is replaced.
func checkAndRename(dirfd int, from, to string) error {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, to, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return unix.EEXIST
	}
	return unix.Renameat(dirfd, from, dirfd, to)
}
