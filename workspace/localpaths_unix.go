//go:build unix

package workspace

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LocalPaths checks rel with each suffix appended (a database and its
// -wal, -shm and -journal files) as [LocalPath] checks one path, and
// returns the first suffix's path. The folders the paths share are walked
// once, where a LocalPath each walks them again; the answer, and the first
// error in the order given, are what LocalPath would give for each in turn.
func LocalPaths(root, rel string, suffixes ...string) (string, error) {
	c, err := writableRel(rel)
	if err != nil || len(suffixes) == 0 {
		return LocalPath(root, rel)
	}
	for _, s := range suffixes {
		cs, err := writableRel(rel + s)
		if err != nil || cs != c+s || strings.ContainsAny(s, `/\`) {
			return localPathsOneByOne(root, rel, suffixes)
		}
	}
	dir, base := splitRel(c)
	cur, err := openatRetry(unix.AT_FDCWD, root, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|pathFlag, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { unix.Close(cur) }()
	first := filepath.Join(root, filepath.FromSlash(c+suffixes[0]))
	if dir != "" {
		parts := strings.Split(dir, "/")
		for i, name := range parts {
			at := strings.Join(parts[:i+1], "/")
			var st unix.Stat_t
			err := unix.Fstatat(cur, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			if errors.Is(err, unix.ENOENT) {
				return first, nil // nothing below exists: no path has anything to refuse
			}
			if err != nil {
				return "", &fs.PathError{Op: "lstat", Path: at, Err: err}
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return "", &RefusedError{Path: at, Reason: ErrSymlink}
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return "", &fs.PathError{Op: "open", Path: at, Err: unix.ENOTDIR}
			}
			fd, err := walkOpen(cur, name, unix.O_DIRECTORY|pathFlag, 0)
			if err != nil {
				if errors.Is(err, errSymlinkMet) {
					return "", &RefusedError{Path: at, Reason: ErrSymlink}
				}
				return "", &fs.PathError{Op: "open", Path: at, Err: unwrapName(err, name)}
			}
			unix.Close(cur)
			cur = fd
		}
	}
	for _, s := range suffixes {
		var st unix.Stat_t
		err := unix.Fstatat(cur, base+s, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "lstat", Path: c + s, Err: err}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return "", &RefusedError{Path: c + s, Reason: ErrSymlink}
		}
	}
	return first, nil
}

func localPathsOneByOne(root, rel string, suffixes []string) (string, error) {
	var first string
	for i, s := range suffixes {
		p, err := LocalPath(root, rel+s)
		if err != nil {
			return "", err
		}
		if i == 0 {
			first = p
		}
	}
	return first, nil
}
