package prompt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/prompt"
)

// TestConcurrentRendersWhileFilesChange renders from one builder on many
// goroutines, with several option sets (as a server does for its users),
// while skill and bootstrap files are edited; under -race this finds
// state the builder's memos share without a lock. Once the edits stop,
// every option set's render equals a render from scratch.
func TestConcurrentRendersWhileFilesChange(t *testing.T) {
	dir := incrementalWorkspace(t)
	_, b := watchedBuilderAt(t, dir)
	variants := []prompt.Options{
		{GOOS: "linux", GOARCH: "amd64"},
		{GOOS: "linux", GOARCH: "amd64", User: "ana"},
		{GOOS: "linux", GOARCH: "amd64", Tools: []string{"exec"}},
		{Preset: prompt.Analyst, GOOS: "linux", GOARCH: "amd64", Now: fixedNow},
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := b.Render(context.Background(), variants[(g+i)%len(variants)]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	write := func(rel, text string) {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(text), 0o644); err != nil {
			t.Error(err)
		}
	}
	for i := range 40 {
		n := i % 7
		write(fmt.Sprintf("skills/skill%02d/SKILL.md", n), fmt.Sprintf("---\nname: skill%02d\ndescription: Edit %d of skill %d.\n---\n\nBody.\n", n, i, n))
		if i%3 == 0 {
			write("SOUL.md", fmt.Sprintf("# Soul\n\nEdit %d.\n", i))
		}
		if i%5 == 0 {
			write("skills/always/SKILL.md", fmt.Sprintf("---\nname: always\ndescription: Always on.\nalways: true\n---\nEdit %d.\n", i))
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, opts := range variants {
		want := render(t, dir, opts)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			got, err := b.Render(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Prompt == want.Prompt && sameReport(got.Report, want.Report) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%+v: the builder's render never matched a fresh one:\n%s\n----\n%s", opts, got.Prompt, want.Prompt)
			}
		}
	}
}
