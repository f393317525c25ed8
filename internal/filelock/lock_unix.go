//go:build unix

package filelock

import (
	"errors"
	"syscall"
)

// fdHandle is a lock file opened with plain system calls: open, fstat,
// flock, one pwrite of the note, close. Through gofrs/flock and os.File, a
// lock also opened the file a second time, truncating it, to write the
// note; a session save pays for every lock.
type fdHandle struct {
	fd       int
	writable bool
}

func open(path string) (handle, error) {
	writable := true
	fd, err := openRetry(path, syscall.O_CREAT|syscall.O_RDWR|syscall.O_CLOEXEC|openFlags)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) {
		// A lock file this process may not write (or a read-only
		// folder) still locks; it just carries no note.
		writable = false
		fd, err = openRetry(path, syscall.O_CREAT|syscall.O_RDONLY|syscall.O_CLOEXEC|openFlags)
	}
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, errors.New("not a regular file")
	}
	return &fdHandle{fd: fd, writable: writable}, nil
}

func openRetry(path string, flag int) (int, error) {
	for {
		fd, err := syscall.Open(path, flag, 0o600)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func (h *fdHandle) try() (bool, error) {
	for {
		err := syscall.Flock(h.fd, syscall.LOCK_EX|syscall.LOCK_NB)
		switch err {
		case nil:
			return true, nil
		case syscall.EWOULDBLOCK:
			return false, nil
		case syscall.EINTR:
			continue
		}
		return false, err
	}
}

// note writes over the start of the file, without truncating it: a
// longer note left by an earlier holder keeps its tail after this one's
// newline, and holder reads the first line only.
func (h *fdHandle) note(s string) {
	if h.writable {
		syscall.Pwrite(h.fd, []byte(s), 0)
	}
}

// release closes the file, which drops the lock with it.
func (h *fdHandle) release() error {
	return syscall.Close(h.fd)
}
