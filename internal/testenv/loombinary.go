package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// LoomBinary builds cmd/loom once per test process and returns its path.
// A test package that uses it calls RemoveLoomBinary from TestMain.
func LoomBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "loom-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "loom")
		if out, err := exec.Command("go", "build", "-o", binPath, "github.com/loomctx/loom/cmd/loom").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// RemoveLoomBinary deletes what LoomBinary built, if anything.
func RemoveLoomBinary() {
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}
