// Package atomicfile writes files so that a reader, or a crash, never sees
// them half-written: a whole-file write goes to a temporary file in the same
// folder that is synced and renamed over the target, and an append is one
// write on a descriptor opened with O_APPEND.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile replaces path with data. The bytes go to a temporary file in the
// same folder, which is synced and then renamed over path; the folder is
// synced too, so the rename survives a crash. Readers see either the old
// file or the new one, never a mix. An existing file keeps its permissions;
// a new one gets perm.
func WriteFile(path string, data []byte, perm fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if st, serr := os.Stat(path); serr == nil {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		perm = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmpName, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// Append adds data to the end of path, creating it with perm if needed, in
// a single write on a descriptor opened with O_APPEND. The kernel places
// each such write at the end of the file as one piece, so concurrent
// appenders, in this process or another, never interleave their bytes.
// Append does not sync: a log entry is not worth a disk flush each.
func Append(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	n, err := f.Write(data)
	if err == nil && n != len(data) {
		err = fmt.Errorf("%s: short append (%d of %d bytes)", path, n, len(data))
	}
	return errors.Join(err, f.Close())
}

// syncDir makes a rename in dir durable. Some systems cannot sync a
// folder; that is not an error worth failing a write for.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
