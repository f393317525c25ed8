//go:build unix && !linux

package atomicfile

func renameNoReplace(dirfd int, from, to string) error { return checkAndRename(dirfd, from, to) }
