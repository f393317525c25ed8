package filelock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/filelock"
)

func TestTwoLocksOnOnePathConflictInOneProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.lock")
	a, err := filelock.Acquire(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = filelock.Acquire(context.Background(), path, 50*time.Millisecond)
	var be *filelock.BusyError
	if !errors.As(err, &be) || !errors.Is(err, filelock.ErrBusy) {
		t.Fatalf("second lock: got %v, want a BusyError", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "pid ") {
		t.Errorf("error %q should name the file and the holder", err)
	}
	if _, err := filelock.Try(path); !errors.Is(err, filelock.ErrBusy) {
		t.Fatalf("Try on a held lock: %v", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	b, err := filelock.Try(path)
	if err != nil {
		t.Fatalf("Try after release: %v", err)
	}
	b.Release()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("lock file mode %v, want 0600", st.Mode().Perm())
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, _ := filelock.Acquire(context.Background(), path, time.Second)
	defer a.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := filelock.Acquire(ctx, path, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestWaiterGetsLockWhenReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, _ := filelock.Acquire(context.Background(), path, time.Second)
	go func() { time.Sleep(50 * time.Millisecond); a.Release() }()
	b, err := filelock.Acquire(context.Background(), path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
}

// TestOtherProcessHoldsLock runs this test binary again as a holder and
// checks the lock covers another process and names it.
func TestOtherProcessHoldsLock(t *testing.T) {
	if p := os.Getenv("FILELOCK_TEST_HOLD"); p != "" {
		l, err := filelock.Acquire(context.Background(), p, 5*time.Second)
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		// Hold until stdin closes.
		buf := make([]byte, 1)
		os.Stdin.Read(buf)
		l.Release()
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOtherProcessHoldsLock$")
	cmd.Env = append(os.Environ(), "FILELOCK_TEST_HOLD="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := stdout.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("holder did not start: %q %v", buf, err)
	}
	_, err := filelock.Acquire(context.Background(), path, 100*time.Millisecond)
	if !errors.Is(err, filelock.ErrBusy) {
		t.Fatalf("got %v, want busy", err)
	}
	if want := "pid " + itoa(cmd.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name holder %q", err, want)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	l, err := filelock.Try(path)
	if err != nil {
		t.Fatalf("after the holder exited: %v", err)
	}
	l.Release()
}

func itoa(n int) string {
	return strconv.Itoa(n)
}
