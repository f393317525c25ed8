//go:build unix && !linux

package workspace

// openBeneath opens rel under dirfd with no symlink followed anywhere: a
// per-component O_NOFOLLOW walk.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	diskOps.Add(1)
	return walkOpen(dirfd, rel, flags, mode)
}

const pathFlag = 0
