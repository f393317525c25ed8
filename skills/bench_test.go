package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func benchWorkspace(b *testing.B, n int) string {
	dir := b.TempDir()
	for i := range n {
		name := fmt.Sprintf("skill-%05d", i)
		p := filepath.Join(dir, "skills", name, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		text := fmt.Sprintf("---\nname: %s\ndescription: >\n  Does task %d. Use when the user asks for %d things.\nmetadata: {\"nanobot\":{\"requires\":{\"bins\":[\"curl\"]}}}\n---\n\n# %s\n\nStep one.\nStep two.\n", name, i, i, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func benchCold(b *testing.B, n int) {
	dir := benchWorkspace(b, n)
	opts := env([]string{"curl"}, nil, "linux")
	for b.Loop() {
		ws, err := openWSErr(dir)
		if err != nil {
			b.Fatal(err)
		}
		set := New(ws, opts).Load()
		if len(set.Skills) != n+3 {
			b.Fatalf("%d skills", len(set.Skills))
		}
	}
}

// benchWarm reloads with one skill changed between loads: only that file
// is re-read and re-parsed; the others cost a stat each.
func benchWarm(b *testing.B, n int) {
	dir := benchWorkspace(b, n)
	ws, err := openWSErr(dir)
	if err != nil {
		b.Fatal(err)
	}
	l := New(ws, env([]string{"curl"}, nil, "linux"))
	l.Load()
	p := filepath.Join(dir, "skills", "skill-00000", "SKILL.md")
	i := 0
	for b.Loop() {
		i++
		b.StopTimer()
		os.WriteFile(p, []byte(fmt.Sprintf("---\nname: skill-00000\ndescription: version %d\n---\nbody\n", i)), 0o644)
		before := l.parses.Load()
		b.StartTimer()
		set := l.Load()
		_ = set.Summary(PromptOptions{})
		if l.parses.Load()-before != 1 {
			b.Fatalf("re-parsed %d files", l.parses.Load()-before)
		}
	}
}

func BenchmarkListCold200(b *testing.B)   { benchCold(b, 200) }
func BenchmarkListCold2000(b *testing.B)  { benchCold(b, 2000) }
func BenchmarkListCold10000(b *testing.B) { benchCold(b, 10000) }
func BenchmarkWarmOne200(b *testing.B)    { benchWarm(b, 200) }
func BenchmarkWarmOne2000(b *testing.B)   { benchWarm(b, 2000) }
func BenchmarkWarmOne10000(b *testing.B)  { benchWarm(b, 10000) }

// BenchmarkLoadColdWorkspace loads the skills of the workspace named by
// LOOM_BENCH_SKILLS_WS from cold (a new door and loader each time, the OS
// file cache warm), as bench/engine/run.sh does for the generator's 10x
// workspace, beside a `cat` of the same files.
func BenchmarkLoadColdWorkspace(b *testing.B) {
	dir := os.Getenv("LOOM_BENCH_SKILLS_WS")
	if dir == "" {
		b.Skip("set LOOM_BENCH_SKILLS_WS to a workspace folder")
	}
	start := cpuTime()
	for b.Loop() {
		ws, err := openWSErr(dir)
		if err != nil {
			b.Fatal(err)
		}
		New(ws, Options{}).Load()
	}
	// CPU time per load (user and system, the garbage collector's
	// included), which a machine shared with other work disturbs less than
	// wall time.
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
