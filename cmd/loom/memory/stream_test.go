// The million-line round trip is left out of -race builds: under the race
// detector on a 2-core CI machine it took 9 minutes and the detector's own
// memory broke its RSS bound. `go test ./...` runs it (1-2 minutes), and
// .ci/run runs it in a step of its own, without -race.

//go:build !race

package memory

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

// writeExportFile writes n memories in exactly the form export writes
// them: one a second from 2025-01-01, every tenth (from the fifth) for one
// of three users, and every thousandth superseded by the next.
func writeExportFile(t testing.TB, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var line []byte
	for i := range n {
		user, by := "", ""
		if i%10 == 5 {
			user = "u" + strconv.Itoa(i%3)
		}
		if i%1000 == 0 && i+1 < n {
			by = fmt.Sprintf("m_%07d", i+1)
		}
		line = append(line[:0], `{"id":"m_`...)
		line = fmt.Appendf(line, "%07d", i)
		line = append(line, `","category":"global_rule","content":"Memory number `...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, `.","created_at":"`...)
		line = base.Add(time.Duration(i)*time.Second).AppendFormat(line, time.RFC3339Nano)
		line = append(line, `","user":"`...)
		line = append(line, user...)
		line = append(line, `","chat":"","superseded_by":"`...)
		line = append(line, by...)
		line = append(line, "\"}\n"...)
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// peak samples the Go heap (live objects) and the process's resident size
// while f runs, and returns their highest values.
func peak(t *testing.T, f func()) (heap, rss uint64) {
	t.Helper()
	runtime.GC()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM; Linux only, best effort
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			heap = max(heap, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				rss = kb << 10
			}
		}
	}
	return heap, rss
}

// roundTrip imports the file into a new workspace and exports it again,
// as the commands do, returning the export and the peaks.
func roundTrip(t *testing.T, file string) (out string, heap, rss uint64) {
	t.Helper()
	ws := t.TempDir()
	out = filepath.Join(t.TempDir(), "export.jsonl")
	var err error
	heap, rss = peak(t, func() {
		var msg bytes.Buffer
		if err = importRun(&Options{IO: &cmdutil.IOStreams{ErrOut: &msg}, Dir: ws, File: file}); err != nil {
			return
		}
		var f *os.File
		if f, err = os.Create(out); err != nil {
			return
		}
		err = exportRun(&Options{IO: &cmdutil.IOStreams{Out: f, ErrOut: io.Discard}, Dir: ws})
		f.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, heap, rss
}

func sameFile(t *testing.T, a, b string) {
	t.Helper()
	fa, _ := os.ReadFile(a)
	fb, _ := os.ReadFile(b)
	if !bytes.Equal(fa, fb) {
		n := min(len(fa), len(fb))
		i := 0
		for i < n && fa[i] == fb[i] {
			i++
		}
		t.Fatalf("export differs from the imported file at byte %d of %d/%d: %.120q vs %.120q", i, len(fa), len(fb), fa[i:], fb[i:])
	}
}

// An export of 1,000,001 memories (some 150 MB, past the 64 MiB the import
// used to refuse) imports back and exports byte for byte the same, and
// the import and export hold about as much memory as for a tenth of the
// lines: they stream, one line at a time.
func TestMillionLineRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("the 1,000,001-line round trip takes 1-2 minutes")
	}
	dir := t.TempDir()
	small, big := filepath.Join(dir, "small.jsonl"), filepath.Join(dir, "big.jsonl")
	writeExportFile(t, small, 100_001)
	writeExportFile(t, big, 1_000_001)
	st, _ := os.Stat(big)

	start := time.Now()
	outSmall, heapSmall, rssSmall := roundTrip(t, small)
	tSmall := time.Since(start)
	sameFile(t, small, outSmall)
	start = time.Now()
	outBig, heapBig, rssBig := roundTrip(t, big)
	tBig := time.Since(start)
	sameFile(t, big, outBig)
	t.Logf("100,001 lines: %v, peak Go heap %.1f MiB, peak RSS %.1f MiB", tSmall.Round(time.Millisecond), float64(heapSmall)/(1<<20), float64(rssSmall)/(1<<20))
	t.Logf("1,000,001 lines (%d MB): %v, peak Go heap %.1f MiB, peak RSS %.1f MiB", st.Size()/1e6, tBig.Round(time.Millisecond), float64(heapBig)/(1<<20), float64(rssBig)/(1<<20))
	// Ten times the lines may not take ten times the memory: allow the
	// small run's peak and 32 MiB for the collector's timing.
	if heapBig > heapSmall+32<<20 {
		t.Errorf("Go heap grew with the lines: %d MiB for 100,001, %d MiB for 1,000,001", heapSmall>>20, heapBig>>20)
	}
	if rssSmall > 0 && rssBig > rssSmall+64<<20 {
		t.Errorf("resident size grew with the lines: %d MiB for 100,001, %d MiB for 1,000,001", rssSmall>>20, rssBig>>20)
	}
}
