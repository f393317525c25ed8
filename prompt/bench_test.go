package prompt_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// benchWorkspace generates a workspace with the shared benchmark generator,
// once per size and process.
func benchWorkspace(b *testing.B, size string) string {
	b.Helper()
	gen := "../../shared/bench/make-workspace"
	if _, err := os.Stat(gen); err != nil {
		b.Skip("the shared benchmark generator is not beside this checkout")
	}
	dir := filepath.Join(os.TempDir(), "loom-bench-"+size)
	if _, err := os.Stat(filepath.Join(dir, "AGENTS.md")); err == nil {
		return dir
	}
	out, err := exec.Command("python3", gen, "--force", size, dir).CombinedOutput()
	if err != nil {
		b.Fatalf("make-workspace: %v\n%s", err, out)
	}
	return dir
}

// BenchmarkRenderWarm renders a second time in the same process with no
// file changed: nothing may be read or tokenized again.
func BenchmarkRenderWarm(b *testing.B) {
	for _, size := range []string{"small", "medium", "large"} {
		b.Run(size, func(b *testing.B) {
			ws, err := workspace.Open(benchWorkspace(b, size))
			if err != nil {
				b.Fatal(err)
			}
			bl := prompt.New(ws)
			defer bl.Close()
			opts := prompt.Options{Preset: prompt.Assistant, GOOS: "linux", GOARCH: "amd64"}
			if _, err := bl.Render(context.Background(), opts); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bl.Render(context.Background(), opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderWarmWatched is BenchmarkRenderWarm with the workspace
// watched, as a long-running process (loom watch, loom chat, a server) has
// it: an unchanged workspace costs no read at all.
func BenchmarkRenderWarmWatched(b *testing.B) {
	for _, size := range []string{"small", "medium", "large"} {
		b.Run(size, func(b *testing.B) {
			ws, err := workspace.Open(benchWorkspace(b, size))
			if err != nil {
				b.Fatal(err)
			}
			if err := ws.Watch(); err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			bl := prompt.New(ws)
			defer bl.Close()
			opts := prompt.Options{Preset: prompt.Assistant, GOOS: "linux", GOARCH: "amd64"}
			if _, err := bl.Render(context.Background(), opts); err != nil {
				b.Fatal(err)
			}
			if !ws.Watching() {
				b.Fatal("the watcher does not cover the workspace")
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bl.Render(context.Background(), opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderCold builds a new workspace and builder each time, in a
// process whose token counts are already cached; bench/render/cold.sh times
// whole processes.
func BenchmarkRenderCold(b *testing.B) {
	dir := benchWorkspace(b, "large")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prompt.Render(context.Background(), dir, prompt.Options{Preset: prompt.Assistant}); err != nil {
			b.Fatal(err)
		}
	}
}
