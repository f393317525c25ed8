package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// Class: symlink swap and FIFO swap (the reader's race). One goroutine keeps
// replacing AGENTS.md, by atomic rename, with a regular file, a symlink to a
// secret outside the workspace, and a FIFO; another swaps the memory/ folder
// for a symlink to an outside folder; others render the prompt in a loop,
// plain and watched. No render may contain the secret, and none may
// hang. Run it with -race.
func TestRaceSwapAgentsFile(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(outside, 0o755)
	const secret = "TOPSECRET-5b0e"
	secretPath := filepath.Join(outside, "secret.md")
	os.WriteFile(secretPath, []byte(secret+"\n"), 0o644)
	agents := filepath.Join(root, "AGENTS.md")
	os.WriteFile(agents, []byte("Be terse.\n"), 0o644)

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := filepath.Join(root, ".swap")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Remove(tmp)
			var err error
			switch i % 3 {
			case 0:
				err = os.WriteFile(tmp, []byte("Be terse.\n"), 0o644)
			case 1:
				err = os.Symlink(secretPath, tmp)
			case 2:
				err = syscall.Mkfifo(tmp, 0o644)
			}
			if err == nil && os.Rename(tmp, agents) == nil {
				swaps.Add(1)
			}
		}
	}()

	// A second swapper does the same one folder up: memory/ is a real
	// folder or a symlink to an outside folder whose MEMORY.md is secret.
	os.MkdirAll(filepath.Join(outside, "mem"), 0o755)
	os.WriteFile(filepath.Join(outside, "mem", "MEMORY.md"), []byte("- "+secret+"\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "memory"), 0o755)
	os.WriteFile(filepath.Join(root, "memory", "MEMORY.md"), []byte("- Likes tea.\n"), 0o644)
	wg.Add(1)
	go func() {
		defer wg.Done()
		real, link, mem := filepath.Join(root, ".mem-real"), filepath.Join(root, ".mem-link"), filepath.Join(root, "memory")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				os.Remove(link)
				if os.Symlink(filepath.Join(outside, "mem"), link) == nil {
					os.Rename(mem, real) // park the real folder
					if os.Rename(link, mem) == nil {
						swaps.Add(1)
					}
				}
			} else {
				os.Remove(mem) // the symlink
				if os.Rename(real, mem) == nil {
					swaps.Add(1)
				}
			}
		}
	}()

	budget := 2 * time.Second
	if testing.Short() {
		budget = 300 * time.Millisecond
	}
	var renders atomic.Int64
	errs := make(chan error, 4)
	for _, watch := range []bool{false, true} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, err := workspace.Open(root)
			if err != nil {
				errs <- err
				return
			}
			if watch {
				if err := ws.Watch(); err != nil {
					errs <- err
					return
				}
				defer ws.Close()
			}
			b := prompt.New(ws)
			defer b.Close()
			for end := time.Now().Add(budget); time.Now().Before(end); {
				res, err := b.Render(context.Background(), prompt.Options{})
				renders.Add(1)
				if res == nil {
					errs <- fmt.Errorf("render (watch=%v): %v", watch, err)
					return
				}
				if strings.Contains(res.Prompt, secret) {
					errs <- fmt.Errorf("render (watch=%v) leaked the secret", watch)
					return
				}
				f, err := ws.Load("AGENTS.md")
				if err == nil && strings.Contains(f.Text, secret) {
					errs <- fmt.Errorf("Load (watch=%v) leaked the secret", watch)
					return
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		time.Sleep(budget)
		close(stop)
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case err := <-errs:
		close(stop)
		t.Fatal(err)
	case <-time.After(budget + 20*time.Second):
		t.Fatal("a render hung while AGENTS.md was being swapped")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d renders over %d swaps", renders.Load(), swaps.Load())
	if swaps.Load() < 3 || renders.Load() < 3 {
		t.Errorf("too little happened: %d renders, %d swaps", renders.Load(), swaps.Load())
	}
}
