package prompt_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
	"golang.org/x/sys/unix"
)

// engineWorkspace generates a workspace with the shared generator and
// imports its memories.jsonl, once per size and machine. "x10" is the large
// workspace with ten times the skills (2,000) and memories (20,000).
func engineWorkspace(b *testing.B, size string) string {
	b.Helper()
	gen := "../../shared/bench/make-workspace"
	if _, err := os.Stat(gen); err != nil {
		b.Skip("the shared benchmark generator is not beside this checkout")
	}
	dir := filepath.Join(os.TempDir(), "loom-engine-"+size)
	if _, err := os.Stat(filepath.Join(dir, ".ready")); err == nil && intact(dir) {
		return dir
	}
	os.RemoveAll(dir)
	script := fmt.Sprintf(`
import importlib.util, importlib.machinery, sys
loader = importlib.machinery.SourceFileLoader("mw", %q)
spec = importlib.util.spec_from_loader("mw", loader)
mw = importlib.util.module_from_spec(spec); loader.exec_module(mw)
mw.SIZES["x10"] = (1.0, 2000, 5, 50, 12, 20000)
mw.main(sys.argv[1:])
`, gen)
	if out, err := exec.Command("python3", "-c", script, size, dir).CombinedOutput(); err != nil {
		b.Fatalf("make-workspace: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "memories.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var ms []memory.Memory
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m memory.Memory
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			b.Fatal(err)
		}
		ms = append(ms, m)
	}
	f.Close()
	store, err := memory.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := store.Import(context.Background(), ms); err != nil {
		b.Fatal(err)
	}
	store.Close()
	os.WriteFile(filepath.Join(dir, ".ready"), nil, 0o644)
	return dir
}

// intact reports whether every skill and bootstrap file of the generated
// workspace still has content: an edit loop killed by an earlier version
// of editLoop between truncating a file and writing it left it empty, and
// every later run measured a broken skill.
func intact(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "skills", "*", "SKILL.md"))
	for _, f := range prompt.BootstrapFiles {
		files = append(files, filepath.Join(dir, f))
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() == 0 {
			return false
		}
	}
	return true
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time the process spent per iteration since
// start, as cpu-ns/op: on a machine shared with other work, wall time
// measures the machine's load as much as the code, and CPU time much less
// so. Background work of the process (the garbage collector, a watcher)
// counts too, as it should.
func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

func warmBuilder(b *testing.B, dir string, watch bool) (*prompt.Builder, *workspace.Workspace) {
	b.Helper()
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if watch {
		if err := ws.Watch(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ws.Close() })
	}
	bl := prompt.New(ws)
	b.Cleanup(func() { bl.Close() })
	return bl, ws
}

func mustRender(b *testing.B, bl *prompt.Builder, opts prompt.Options) *prompt.Result {
	res, err := bl.Render(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// BenchmarkRenderBudgeted is a warm render of the large workspace (2,000
// memories) and of the 10× one (20,000), without a budget and at 8k and 32k
// tokens. Each iteration changes nothing on disk but asks for a render for
// a chat never asked for before, so no whole result can be reused (the
// builder keeps its last results by options: two chats taken in turn would
// each reuse one): what is measured is the budget search, the counting and
// the memory selection.
func BenchmarkRenderBudgeted(b *testing.B) { benchmarkRenderBudgeted(b, false) }

// BenchmarkRenderBudgetedWatched is BenchmarkRenderBudgeted with a watch on
// the workspace, which leaves out the stat calls every render without one
// makes (most of an unbudgeted one's time): the budget's own cost shows.
func BenchmarkRenderBudgetedWatched(b *testing.B) { benchmarkRenderBudgeted(b, true) }

func benchmarkRenderBudgeted(b *testing.B, watch bool) {
	for _, size := range []string{"large", "x10"} {
		for _, budget := range []int{0, 8000, 32000} {
			b.Run(fmt.Sprintf("%s/budget=%d", size, budget), func(b *testing.B) {
				bl, _ := warmBuilder(b, engineWorkspace(b, size), watch)
				opts := prompt.Options{Preset: prompt.Assistant, GOOS: "linux", GOARCH: "amd64", Budget: budget, MemoryBudget: 1 << 30}
				mustRender(b, bl, opts)
				b.ReportAllocs()
				i := 0
				start := cpuTime()
				for b.Loop() {
					i++
					opts.ChatURL = fmt.Sprintf("https://chat.example/c/%d", i)
					mustRender(b, bl, opts)
				}
				reportCPU(b, start)
			})
		}
	}
}

// extraLine is what editLoop appends to the file it edits, and cuts off
// again.
const extraLine = "\nOne more line.\n"

// editLoop edits one file between renders, alternating two contents, so
// each render follows one real change. Each edit is one system call, an
// append of extraLine or a truncation that removes it, so a watcher sees
// one event and a render never reads a half-written file; and a run killed
// mid-loop leaves the file whole.
func editLoop(b *testing.B, bl *prompt.Builder, opts prompt.Options, path string) {
	ws := bl.Workspace()
	orig, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if bytes.HasSuffix(orig, []byte(extraLine)) { // left so by a killed run
		orig = orig[:len(orig)-len(extraLine)]
		if err := os.Truncate(path, int64(len(orig))); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { os.Truncate(path, int64(len(orig))) })
	grow := func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(extraLine)
		return errors.Join(err, f.Close())
	}
	mustRender(b, bl, opts)
	b.ReportAllocs()
	i := 0
	var cpu time.Duration
	defer func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		}
	}()
	for b.Loop() {
		b.StopTimer()
		i++
		gen := ws.Generation()
		edit := grow
		if i%2 == 0 {
			edit = func() error { return os.Truncate(path, int64(len(orig))) }
		}
		if err := edit(); err != nil {
			b.Fatal(err)
		}
		// With a watch, the change is seen once its event arrived: wait
		// for it, so the render measured is the one after the change.
		for deadline := time.Now().Add(5 * time.Second); ws.Watching() && ws.Generation() == gen && time.Now().Before(deadline); {
			time.Sleep(20 * time.Microsecond)
		}
		b.StartTimer()
		c0 := cpuTime()
		mustRender(b, bl, opts)
		cpu += cpuTime() - c0
	}
}

// BenchmarkRerenderAfterEdit renders again after one skill file, or one
// bootstrap file, changed: with the workspace watched, and without a watch
// (each file validated by its stat). BenchmarkRenderFull is the same render
// from a new builder, the cost when nothing is reused.
func BenchmarkRerenderAfterEdit(b *testing.B) {
	for _, size := range []string{"large", "x10"} {
		for _, watch := range []bool{true, false} {
			for _, file := range []string{"skill", "bootstrap"} {
				name := fmt.Sprintf("%s/watch=%v/%s", size, watch, file)
				b.Run(name, func(b *testing.B) {
					dir := engineWorkspace(b, size)
					bl, _ := warmBuilder(b, dir, watch)
					opts := prompt.Options{Preset: prompt.Assistant, GOOS: "linux", GOARCH: "amd64"}
					path := filepath.Join(dir, "SOUL.md")
					if file == "skill" {
						entries, _ := os.ReadDir(filepath.Join(dir, "skills"))
						path = filepath.Join(dir, "skills", entries[len(entries)/2].Name(), "SKILL.md")
					}
					editLoop(b, bl, opts, path)
				})
			}
		}
	}
}

// BenchmarkRerenderAnalystAfterEdit is BenchmarkRerenderAfterEdit's
// watched skill edit on the large workspace with the analyst preset, whose
// skills section is the listing.
func BenchmarkRerenderAnalystAfterEdit(b *testing.B) {
	dir := engineWorkspace(b, "large")
	bl, _ := warmBuilder(b, dir, true)
	opts := prompt.Options{Preset: prompt.Analyst, Now: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), GOOS: "linux", GOARCH: "amd64"}
	entries, _ := os.ReadDir(filepath.Join(dir, "skills"))
	editLoop(b, bl, opts, filepath.Join(dir, "skills", entries[len(entries)/2].Name(), "SKILL.md"))
}

// BenchmarkRenderFull renders with a new workspace and builder each time,
// in a process whose token counts are cached: the cost of a render that
// reuses nothing of its own.
func BenchmarkRenderFull(b *testing.B) {
	for _, size := range []string{"large", "x10"} {
		b.Run(size, func(b *testing.B) {
			dir := engineWorkspace(b, size)
			opts := prompt.Options{Preset: prompt.Assistant, GOOS: "linux", GOARCH: "amd64"}
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, err := prompt.Render(context.Background(), dir, opts); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkStatFloor stats, relative to one open descriptor of the root,
// every file a render of the workspace reads (the bootstrap files, the
// long-term memory file, every skill file): the least a render without a
// watch must do to see an edit, one system call per file.
func BenchmarkStatFloor(b *testing.B) {
	for _, size := range []string{"large", "x10"} {
		b.Run(size, func(b *testing.B) {
			dir := engineWorkspace(b, size)
			files := append(append([]string{}, prompt.BootstrapFiles...), "memory/MEMORY.md", "loom.yaml")
			for _, pattern := range []string{"skills/*/SKILL.md", "agent/skills/*.md"} {
				m, _ := filepath.Glob(filepath.Join(dir, pattern))
				for _, p := range m {
					rel, _ := filepath.Rel(dir, p)
					files = append(files, rel)
				}
			}
			root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer unix.Close(root)
			start := cpuTime()
			for b.Loop() {
				var st unix.Stat_t
				for _, f := range files {
					unix.Fstatat(root, f, &st, 0)
				}
			}
			reportCPU(b, start)
			b.ReportMetric(float64(len(files)), "files")
		})
	}
}
