package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	goccy "github.com/goccy/go-yaml/parser"
)

// hostileShapes are the inputs that made loom.yaml parsing super-linear:
// tens of thousands of keys (valid ones: budget sections), the same in
// flow style, deep flow nesting, deep block nesting and one long string.
var hostileShapes = []struct {
	name string
	gen  func(n int) []byte
}{
	{"keys", func(n int) []byte {
		var b strings.Builder
		b.WriteString("budget:\n  sections:\n")
		for i := 0; b.Len() < n-24; i++ {
			fmt.Fprintf(&b, "    s%07d: %d\n", i, i+1)
		}
		return []byte(b.String())
	}},
	{"flowkeys", func(n int) []byte {
		var b strings.Builder
		b.WriteString("budget: {sections: {")
		for i := 0; b.Len() < n-24; i++ {
			fmt.Fprintf(&b, "s%07d: %d, ", i, i+1)
		}
		b.WriteString("}}\n")
		return []byte(b.String())
	}},
	{"deepflow", func(n int) []byte {
		d := (n - 16) / 2
		return []byte("disable: " + strings.Repeat("[", d) + strings.Repeat("]", d) + "\n")
	}},
	{"deepblock", func(n int) []byte {
		var b strings.Builder
		for i := 0; b.Len()+i+4 < n; i++ {
			b.WriteString(strings.Repeat(" ", i) + "a:\n")
		}
		return []byte(b.String())
	}},
	{"longstring", func(n int) []byte {
		return []byte("description: \"" + strings.Repeat("x", n-20) + "\"\n")
	}},
}

var benchSizes = []int{16 << 10, 64 << 10, 256 << 10, 1 << 20}

// BenchmarkParse measures Parse on each hostile shape up to 1 MiB.
// in-bytes-alloc/op is the bytes allocated per input byte: flat across
// sizes means linear memory, and ns/op growing 4× per 4× size means linear
// time. Compare BenchmarkParsePeerGoccy, the parser loom used before.
func BenchmarkParse(b *testing.B) {
	for _, sh := range hostileShapes {
		for _, size := range benchSizes {
			data := sh.gen(size - 64)
			b.Run(fmt.Sprintf("%s/%dKiB", sh.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				for b.Loop() {
					Parse("loom.yaml", data)
				}
				runtime.ReadMemStats(&ms1)
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(len(data)), "alloc/in-byte")
			})
		}
	}
}

// BenchmarkParsePeerGoccy parses the same inputs with goccy/go-yaml's
// parser alone (no decoding), up to 64 KiB: beyond that it takes seconds
// to minutes (60k keys: about a minute, deep flow nesting at 170 KiB: over
// a minute).
func BenchmarkParsePeerGoccy(b *testing.B) {
	for _, sh := range hostileShapes {
		for _, size := range benchSizes[:2] {
			data := sh.gen(size - 64)
			b.Run(fmt.Sprintf("%s/%dKiB", sh.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				for b.Loop() {
					goccy.ParseBytes(data, 0)
				}
				runtime.ReadMemStats(&ms1)
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(len(data)), "alloc/in-byte")
			})
		}
	}
}
