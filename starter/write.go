package starter

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// Write puts the starter files of preset into dir, creating dir and any
// folder below it as needed. It never replaces an existing file: such paths
// come back in skipped. created and skipped are slash-relative and sorted.
// On an error the files created so far are still reported.
//
// Each file is written to a temporary file in its target folder, synced, and
// then hard-linked to its final name. A link fails when the name exists, so a
// file that appears between the check and the write is kept, never replaced,
// and a reader never sees a half-written file. On a file system without hard
// links, Write falls back to checking that the name is free and renaming onto
// it; there a file created in the short window between the check and the
// rename would be replaced. That window is accepted because the alternative,
// O_EXCL on the final name, would expose half-written files instead.
func Write(dir, preset string) (created, skipped []string, err error) {
	fsys, err := Files(preset)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	err = fs.WalkDir(fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			return nil
		}
		data, err := fs.ReadFile(fsys, rel)
		if err != nil {
			return err
		}
		ok, err := createNew(target, data)
		if err != nil {
			return err
		}
		if ok {
			created = append(created, rel)
		} else {
			skipped = append(skipped, rel)
		}
		return nil
	})
	slices.Sort(created)
	slices.Sort(skipped)
	return created, skipped, err
}

// createNew writes data to path only if nothing exists at path yet. It
// reports false, with no error, when something does.
func createNew(path string, data []byte) (ok bool, err error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return false, err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // after a link the name is only an extra one
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		if !linkUnsupported(err) {
			return false, err
		}
		if _, err := os.Lstat(path); err == nil {
			return false, nil
		}
		if err := os.Rename(tmpName, path); err != nil {
			return false, err
		}
	}
	return true, syncDir(dir)
}

// linkUnsupported reports whether err says the file system has no hard links.
func linkUnsupported(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) ||
		errors.Is(err, syscall.EPERM) ||
		errors.Is(err, syscall.EXDEV) ||
		errors.Is(err, syscall.EMLINK)
}

// syncDir makes the new name in dir durable. Some systems cannot sync a
// folder; that is not worth failing the write for.
func syncDir(dir string) error {
	if dir == "" {
		dir = "."
	}
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
