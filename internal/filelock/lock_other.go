//go:build !unix

package filelock

import (
	"os"

	"github.com/gofrs/flock"
)

type flockHandle struct {
	f    *flock.Flock
	path string
}

func open(path string) (handle, error) {
	return &flockHandle{f: flock.New(path, flock.SetPermissions(0o600), flock.SetFlag(os.O_CREATE|os.O_RDONLY|openFlags)), path: path}, nil
}

func (h *flockHandle) try() (bool, error) { return h.f.TryLock() }

func (h *flockHandle) note(s string) {
	if w, err := os.OpenFile(h.path, os.O_WRONLY|os.O_TRUNC|openFlags, 0); err == nil {
		w.WriteString(s)
		w.Close()
	}
}

func (h *flockHandle) release() error {
	err := h.f.Unlock()
	h.f.Close()
	return err
}
