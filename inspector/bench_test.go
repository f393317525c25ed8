package inspector_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loomctx/loom/internal/testenv"
)

// BenchmarkBrowser measures the inspector in Chromium on the shared
// generator's large workspace (250 skills): navigation to the first paint of
// the sections, a budget change to the updated view, and a file edit on disk
// to the updated view. Each reports its median and 99th percentile in ms.
func BenchmarkBrowser(b *testing.B) {
	chromium := testenv.Chromium(b)
	gen, _ := filepath.Abs("../../shared/bench/make-workspace")
	if _, err := os.Stat(gen); err != nil {
		b.Skip("the shared benchmark generator is not beside this checkout")
	}
	root := filepath.Join(b.TempDir(), "ws")
	if out, err := exec.Command("python3", gen, "large", root).CombinedOutput(); err != nil {
		b.Fatalf("make-workspace: %v\n%s", err, out)
	}
	bin := buildLoom(b)
	base := startServe(b, bin, root)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/inspect/default/"), chromedp.WaitVisible("details.section")); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, step func(i int) float64) {
		ms := make([]float64, 0, b.N)
		for i := range b.N {
			ms = append(ms, step(i))
		}
		slices.Sort(ms)
		b.ReportMetric(ms[len(ms)/2], "p50-ms")
		b.ReportMetric(ms[len(ms)*99/100], "p99-ms")
	}
	evalF := func(js string) float64 {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](js, chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	b.Run("first_paint", func(b *testing.B) {
		run(b, func(int) float64 {
			if err := chromedp.Do(ctx, chromedp.Navigate(base+"/inspect/default/"), chromedp.WaitVisible("details.section")); err != nil {
				b.Fatal(err)
			}
			return evalF(`(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`)
		})
	})
	b.Run("budget_change", func(b *testing.B) {
		run(b, func(i int) float64 {
			budget := 4000 + 1000*(i%2)
			return evalF(timedRefresh(
				fmt.Sprintf(`const e = document.querySelector("input[name=budget]"); e.value = "%d"; e.dispatchEvent(new Event("input", {bubbles: true}))`, budget),
				fmt.Sprintf(`document.getElementById("rendered").dataset.query.includes("budget=%d")`, budget)))
		})
	})
	b.Run("file_edit", func(b *testing.B) {
		agents, err := os.ReadFile(filepath.Join(root, "RULES.md"))
		if err != nil {
			b.Fatal(err)
		}
		run(b, func(i int) float64 {
			marker := fmt.Sprintf("BENCH-MARKER-%d-%d", time.Now().UnixNano(), i)
			start := time.Now()
			if err := os.WriteFile(filepath.Join(root, "RULES.md"), append(append([]byte{}, agents...), "\n"+marker+"\n"...), 0o644); err != nil {
				b.Fatal(err)
			}
			evalF(fmt.Sprintf(`new Promise((resolve, reject) => {
				const t0 = performance.now();
				const check = () => {
					if (document.getElementById("view").textContent.includes(%q)) { resolve(performance.now() - t0); return; }
					if (performance.now() - t0 > 5000) { reject(new Error("timed out")); return; }
					setTimeout(check, 5);
				};
				check();
			})`, marker))
			return float64(time.Since(start).Microseconds()) / 1000
		})
	})
}
