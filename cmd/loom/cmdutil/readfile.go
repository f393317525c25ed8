package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// DefaultReadLimit is how much ReadFileLimit reads of a file named on the
// command line when the caller has no better bound: 16 MiB.
const DefaultReadLimit = 16 << 20

// ErrFileTooLarge is wrapped by ReadFileLimit's error for a file over its
// limit.
var ErrFileTooLarge = errors.New("file too large")

// ReadFileLimit reads a file named on the command line, or standard input
// for "-" (given as in), refusing to read more than limit bytes: a device
// such as /dev/zero or an endless pipe ends in a clear error instead of
// exhausting memory. A folder is refused by name. The error names the file.
func ReadFileLimit(name string, limit int64, in io.Reader) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	r, size, err := OpenInput(name, in)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if size > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, the limit is %s", name, ErrFileTooLarge, size, sizeName(limit))
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayName(name), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %s", displayName(name), ErrFileTooLarge, sizeName(limit))
	}
	return data, nil
}

// OpenInput opens a file named on the command line for reading as a
// stream, or standard input for "-" (given as in; closing it does
// nothing). A folder is refused by name. size is a regular file's size,
// else -1; the reader puts no bound on what it reads.
func OpenInput(name string, in io.Reader) (r io.ReadCloser, size int64, err error) {
	if name == "-" {
		if in == nil {
			in = os.Stdin
		}
		return io.NopCloser(in), -1, nil
	}
	// O_NONBLOCK: opening a FIFO with no writer must not hang.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if st.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: is a folder, not a file", name)
	}
	size = -1
	if st.Mode().IsRegular() {
		size = st.Size()
	}
	return f, size, nil
}

func displayName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

func sizeName(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
