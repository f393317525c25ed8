package atomicfile

import "golang.org/x/sys/unix"

func renameNoReplace(dirfd int, from, to string) error {
	err := unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		return checkAndRename(dirfd, from, to)
	}
	return err
}
