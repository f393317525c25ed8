package tokens

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCorpus measures uncached throughput (MB/s) on every corpus file.
// bench/tokens/compare.sh runs it beside npm tiktoken and gpt-tokenizer.
func BenchmarkCorpus(b *testing.B) {
	entries, err := os.ReadDir("testdata/corpus")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		text := readCorpus(b, e.Name())
		for _, enc := range exactEncodings {
			c, _ := Uncached(enc)
			c.Count("warm up") // load the vocabulary outside the timing
			b.Run(e.Name()+"/"+enc, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					c.Count(text)
				}
			})
		}
	}
}

// BenchmarkCorpusNoMemo is BenchmarkCorpus with the long-piece memo
// emptied before every count, so that every piece is merged: the cost of
// counting a text the process has not seen.
func BenchmarkCorpusNoMemo(b *testing.B) {
	entries, err := os.ReadDir("testdata/corpus")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		text := readCorpus(b, e.Name())
		for _, bp := range []*bpe{cl100k, o200k} {
			bp.Count("warm up")
			b.Run(e.Name()+"/"+bp.name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					bp.long.reset()
					bp.Count(text)
				}
			})
		}
	}
}

// BenchmarkWorstCase counts 100 KB that the split leaves as one piece, so
// that merging is all the work. Each must stay well under 100 ms.
func BenchmarkWorstCase(b *testing.B) {
	cases := []struct{ name, text string }{
		{"a-100KB", strings.Repeat("a", 100<<10)},
		{"spaces-100KB", strings.Repeat(" ", 100<<10)},
	}
	for _, tc := range cases {
		for _, enc := range exactEncodings {
			c, _ := Uncached(enc)
			c.Count("warm up")
			b.Run(tc.name+"/"+enc, func(b *testing.B) {
				b.SetBytes(int64(len(tc.text)))
				b.ReportAllocs()
				for b.Loop() {
					c.Count(tc.text)
				}
			})
		}
	}
}

// BenchmarkCached compares a warm cache hit with counting again, on the
// prose file and on one short line.
func BenchmarkCached(b *testing.B) {
	texts := map[string]string{
		"prose": readCorpus(b, "prose.txt"),
		"line":  "You are a helpful assistant. Answer briefly.",
	}
	for _, name := range []string{"prose", "line"} {
		text := texts[name]
		u, _ := Uncached(O200kBase)
		c := Cached(u, DefaultCacheBytes)
		c.Count(text)
		b.Run(name+"/uncached", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				u.Count(text)
			}
		})
		b.Run(name+"/cached", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				c.Count(text)
			}
		})
	}
}

// BenchmarkEstimate measures the chars4 estimator on the prose file.
func BenchmarkEstimate(b *testing.B) {
	text := readCorpus(b, "prose.txt")
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Estimate{}.Count(text)
	}
}

// BenchmarkColdFirstCount measures the first count of a fresh process:
// building the vocabulary and the split pattern, then counting one line.
// Only a new process is cold, so each iteration starts one (this test
// binary, running TestColdChild) and reports the time the child measured
// as ms/first-count; ns/op includes starting the process.
func BenchmarkColdFirstCount(b *testing.B) {
	for _, enc := range exactEncodings {
		b.Run(enc, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestColdChild$")
				cmd.Env = append(os.Environ(), "LOOM_TOKENS_COLD="+enc)
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("child: %v\n%s", err, out)
				}
				line, _, _ := strings.Cut(string(out), "\n")
				ns, err := strconv.ParseInt(strings.TrimPrefix(line, "cold-ns "), 10, 64)
				if err != nil {
					b.Fatalf("child said %q", out)
				}
				total += time.Duration(ns)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/first-count")
		})
	}
}

// TestColdChild is BenchmarkColdFirstCount's child process; on its own it
// does nothing.
func TestColdChild(t *testing.T) {
	enc := os.Getenv("LOOM_TOKENS_COLD")
	if enc == "" {
		t.Skip("run by BenchmarkColdFirstCount")
	}
	c, err := Get(enc)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.Count("Hello, world! This is the first count.")
	fmt.Printf("cold-ns %d\n", time.Since(start).Nanoseconds())
}
