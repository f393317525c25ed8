// Command serve-load is the load benchmark of `loom serve` (bench/serve).
//
// It starts `loom serve` on a workspace, measures its cold start (process
// start to the first 200 on /readyz), then runs a bounded closed-loop load
// — C concurrent clients for D each — against, in turn:
//
//   - floor: a bare net/http server in its own process that answers every
//     request with the same bytes loom's render answers, from memory;
//   - render: POST /v1/workspaces/default/render;
//   - render-304: the same with If-None-Match;
//   - messages: POST .../messages with a history of H messages;
//
// and prints req/s, p50, p99 and max latency and errors for each, with
// render's throughput as a share of the floor's, and loom's RSS after each
// phase (and after -soak of extra render load, to see whether it grows).
//
// A closed loop at full speed measures the queue, not the server: with C
// clients always waiting, the mean latency is C / throughput (Little's law),
// so on a machine where even the floor does 6,000 req/s, 64 clients see
// about 10 ms whatever loom does. So the floor and render are also driven
// open-loop: the same C connections, but requests sent on a fixed schedule
// at -rate req/s (by default half the floor's closed-loop throughput, the
// share the goal asks of render), each latency counted from the moment the
// request was due, so a server that falls behind is charged for the wait.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/bench/internal/loadgen"
)

func main() {
	var (
		loom     = flag.String("loom", "loom", "the loom binary")
		ws       = flag.String("w", "", "workspace folder")
		conc     = flag.Int("c", 64, "concurrent clients")
		dur      = flag.Duration("d", 30*time.Second, "duration of each phase")
		hist     = flag.Int("history", 200, "messages in the history of the messages phase")
		soak     = flag.Duration("soak", 0, "extra render load after the phases, RSS printed each minute")
		rate     = flag.Float64("rate", 0, "requests per second of the open-loop phases; 0 means half the floor's closed-loop throughput")
		floorArg = flag.String("floor", "", "internal: serve this file's bytes as the floor server")
	)
	flag.Parse()
	if *floorArg != "" {
		serveFloor(*floorArg)
		return
	}
	if *ws == "" {
		fmt.Fprintln(os.Stderr, "serve-load: -w DIR is required")
		os.Exit(2)
	}
	if err := run(*loom, *ws, *conc, *dur, *hist, *soak, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "serve-load:", err)
		os.Exit(1)
	}
}

// serveFloor answers every request with the file's bytes: the least any
// HTTP server can do for the same response.
func serveFloor(path string) {
	body, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	n := strconv.Itoa(len(body))
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", n)
		w.Write(body)
	}))
}

type proc struct {
	cmd  *exec.Cmd
	addr string
}

// start runs a command and reads its address from the first line of out
// matching prefix.
func start(cmd *exec.Cmd, fromStderr bool, prefix string) (*proc, error) {
	var pipe io.ReadCloser
	var err error
	if fromStderr {
		pipe, err = cmd.StderrPipe()
	} else {
		pipe, err = cmd.StdoutPipe()
	}
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return &proc{cmd: cmd, addr: strings.TrimPrefix(a, "http://")}, nil
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("no address from " + cmd.Path)
	}
}

func rssKB(pid int) int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

func run(loom, ws string, conc int, dur time.Duration, hist int, soak time.Duration, rate float64) error {
	// Cold start: process start to the first 200 on /readyz. The port is
	// chosen here so polling can begin at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	t0 := time.Now()
	cmd := exec.Command(loom, "serve", "-w", ws, "--addr", addr, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	var cold time.Duration
	for {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				cold = time.Since(t0)
				break
			}
		}
		if time.Since(t0) > 30*time.Second {
			return errors.New("loom serve never became ready")
		}
		time.Sleep(200 * time.Microsecond)
	}
	base := "http://" + addr
	pid := cmd.Process.Pid
	fmt.Printf("workspace %s, %d clients, %s per phase\n", ws, conc, dur)
	fmt.Printf("cold start (process start to first 200 on /readyz): %.1f ms\n\n", float64(cold.Microseconds())/1000)

	renderBody := []byte(`{"channel":"slack","user":"u1"}`)
	res, err := http.Post(base+"/v1/workspaces/default/render", "application/json", bytes.NewReader(renderBody))
	if err != nil {
		return err
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	etag := res.Header.Get("ETag")
	if res.StatusCode != 200 || etag == "" {
		return fmt.Errorf("render: %d %s", res.StatusCode, page)
	}
	tmp, err := os.CreateTemp("", "floor-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	tmp.Write(page)
	tmp.Close()
	self, _ := os.Executable()
	floor, err := start(exec.Command(self, "-floor", tmp.Name()), false, "")
	if err != nil {
		return err
	}
	defer floor.cmd.Process.Kill()

	var h []map[string]string
	for i := 0; i < hist; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		h = append(h, map[string]string{"role": role, "content": fmt.Sprintf("Message %d of the conversation, with a little text to carry.", i)})
	}
	msgBody, _ := json.Marshal(map[string]any{"message": "And now?", "history": h, "channel": "slack", "user": "u1", "now": "2026-01-02T03:04:05Z"})

	fmt.Printf("prompt: %d bytes of response; messages request: %d bytes\n\n", len(page), len(msgBody))
	fpid := floor.cmd.Process.Pid
	fmt.Printf("%-12s %10s %9s %9s %9s %7s %9s %9s %9s\n", "phase", "req/s", "p50 ms", "p99 ms", "max ms", "errors", "rss MiB", "srv µs/r", "gen µs/r")
	floorRes := measured(fpid, func() *result { return load("http://"+floor.addr+"/", renderBody, nil, conc, dur, 200) })
	floorRes.print("floor", 0)
	rend := measured(pid, func() *result { return load(base+"/v1/workspaces/default/render", renderBody, nil, conc, dur, 200) })
	rend.print("render", rssKB(pid))
	nm := measured(pid, func() *result {
		return load(base+"/v1/workspaces/default/render", renderBody, map[string]string{"If-None-Match": etag}, conc, dur, 304)
	})
	nm.print("render-304", rssKB(pid))
	msg := measured(pid, func() *result { return load(base+"/v1/workspaces/default/messages", msgBody, nil, conc, dur, 200) })
	msg.print("messages", rssKB(pid))
	if rate <= 0 {
		rate = floorRes.rps / 2
	}
	fmt.Printf("\nopen loop: %d connections, %.0f req/s offered, latency from each request's due time\n", conc, rate)
	fmt.Printf("%-12s %10s %9s %9s %9s %7s %9s %9s %9s\n", "phase", "req/s", "p50 ms", "p99 ms", "max ms", "errors", "rss MiB", "srv µs/r", "gen µs/r")
	floorOpen := measured(fpid, func() *result { return loadAt("http://"+floor.addr+"/", renderBody, nil, conc, dur, 200, rate) })
	floorOpen.print("floor", 0)
	before := renderHistogram(base)
	rendOpen := measured(pid, func() *result {
		return loadAt(base+"/v1/workspaces/default/render", renderBody, nil, conc, dur, 200, rate)
	})
	rendOpen.print("render", rssKB(pid))
	inLoom := handlerP99(before, renderHistogram(base))
	fmt.Printf("\nrender throughput / floor (closed loop): %.2f (goal ≥ 0.50)\n", rend.rps/floorRes.rps)
	fmt.Printf("render p99 at %.0f req/s (open loop): %.2f ms, floor %.2f ms (goal < 5 ms)\n",
		rate, ms(rendOpen.p(0.99)), ms(floorOpen.p(0.99)))
	fmt.Printf("  of which inside loom's handler (its own latency histogram, same phase): p99 ≤ %s\n", inLoom)
	if soak > 0 {
		fmt.Printf("\nsoak: render load; RSS, and the Go heap in use (go_memstats_heap_inuse_bytes), each minute\n")
		start := rssKB(pid)
		for m := 1; time.Duration(m)*time.Minute <= soak; m++ {
			r := load(base+"/v1/workspaces/default/render", renderBody, nil, conc, time.Minute, 200)
			fmt.Printf("  minute %2d: %8.0f req/s, rss %.1f MiB (start %.1f), heap in use %.1f MiB\n",
				m, r.rps, float64(rssKB(pid))/1024, float64(start)/1024, gauge(base, "go_memstats_heap_inuse_bytes")/(1<<20))
		}
	}
	return nil
}

// loadAt offers rate requests per second over conc connections for dur
// (loadgen.OpenLoop). Its latency runs from when a request was due, so
// time spent waiting for a free connection counts.
func loadAt(url string, body []byte, headers map[string]string, conc int, dur time.Duration, want int, rate float64) *result {
	client, done := loadgen.Client(conc)
	defer done()
	var mu sync.Mutex
	total := &result{}
	begin := loadgen.OpenLoop(conc, dur, rate, func(due iter.Seq[time.Time]) {
		var own result
		for t := range due {
			status, err := post(client, url, body, headers)
			own.note(t, status, want, err)
		}
		total.add(&mu, own.lat, own.errs)
	})
	return total.finish(begin)
}

// gauge reads one unlabelled metric from loom's /metrics, or -1.
func gauge(base, name string) float64 {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// renderHistogram reads loom's /metrics: the cumulative count of each
// latency bucket of the render route, by the bucket's upper bound in
// seconds (+Inf included).
func renderHistogram(base string) map[float64]float64 {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	out := map[float64]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "loom_http_request_duration_seconds_bucket{") ||
			!strings.Contains(line, `route="POST /v1/workspaces/{ws}/render"`) {
			continue
		}
		_, le, _ := strings.Cut(line, `le="`)
		le, _, _ = strings.Cut(le, `"`)
		bound, err1 := strconv.ParseFloat(le, 64)
		n, err2 := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err1 == nil && err2 == nil {
			out[bound] = n
		}
	}
	return out
}

// handlerP99 returns the smallest bucket bound holding 99% of the requests
// counted between two readings of the histogram.
func handlerP99(before, after map[float64]float64) string {
	inf := math.Inf(1)
	total := after[inf] - before[inf]
	if total <= 0 {
		return "?"
	}
	var bounds []float64
	for b := range after {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	for _, b := range bounds {
		if after[b]-before[b] >= 0.99*total {
			if math.IsInf(b, 1) {
				return "over the largest bucket"
			}
			return strconv.FormatFloat(b*1000, 'g', -1, 64) + " ms"
		}
	}
	return "?"
}

type result struct {
	n, errs int
	rps     float64
	lat     []time.Duration
	// CPU per request (user+system) of the serving process and of this
	// load generator, which share the machine.
	srvCPU, genCPU float64
}

// measured runs a phase and notes the CPU the server (pid) and this load
// generator spent on it, per request.
func measured(pid int, phase func() *result) *result {
	srv, gen := loadgen.CPUTime(pid), loadgen.CPUTime(os.Getpid())
	r := phase()
	if n := float64(r.n + r.errs); n > 0 {
		r.srvCPU, r.genCPU = (loadgen.CPUTime(pid)-srv)/n, (loadgen.CPUTime(os.Getpid())-gen)/n
	}
	return r
}

func (r *result) p(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r *result) print(name string, rss int) {
	rs := "-"
	if rss > 0 {
		rs = fmt.Sprintf("%.1f", float64(rss)/1024)
	}
	fmt.Printf("%-12s %10.0f %9.3f %9.3f %9.2f %7d %9s %9.0f %9.0f\n", name, r.rps, ms(r.p(0.5)), ms(r.p(0.99)), ms(r.p(1)), r.errs, rs, r.srvCPU*1e6, r.genCPU*1e6)
}

// load runs conc clients, each sending the request again as soon as the
// last answer is read, for dur.
func load(url string, body []byte, headers map[string]string, conc int, dur time.Duration, want int) *result {
	client, done := loadgen.Client(conc)
	defer done()
	var mu sync.Mutex
	total := &result{}
	begin := loadgen.ClosedLoop(conc, dur, func(ctx context.Context) {
		var own result
		for ctx.Err() == nil {
			t := time.Now()
			status, err := post(client, url, body, headers)
			if err != nil && ctx.Err() != nil {
				break // cut off by the end of the run, not a failure
			}
			own.note(t, status, want, err)
		}
		total.add(&mu, own.lat, own.errs)
	})
	return total.finish(begin)
}

// post sends one JSON request and reads the whole answer.
func post(client *http.Client, url string, body []byte, headers map[string]string) (status int, err error) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	// Read in large pieces: io.Copy to io.Discard reads 8 KiB at a time,
	// thirteen system calls for a 100 KB prompt, and this generator's CPU
	// competes with the server it measures, floor and loom alike.
	buf := readBufs.Get().(*[]byte)
	for {
		if _, err := res.Body.Read(*buf); err != nil {
			break
		}
	}
	readBufs.Put(buf)
	res.Body.Close()
	return res.StatusCode, nil
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// add merges one client's latencies and errors.
// note records one request that began at start: its latency, and an
// error when it failed or answered other than want.
func (r *result) note(start time.Time, status, want int, err error) {
	if err != nil {
		r.errs++
		return
	}
	r.lat = append(r.lat, time.Since(start))
	if status != want {
		r.errs++
	}
}

func (r *result) add(mu *sync.Mutex, lat []time.Duration, errs int) {
	mu.Lock()
	r.lat = append(r.lat, lat...)
	r.errs += errs
	mu.Unlock()
}

// finish sorts the latencies and works out the rate since begin.
func (r *result) finish(begin time.Time) *result {
	elapsed := time.Since(begin)
	slices.Sort(r.lat)
	r.n = len(r.lat)
	r.rps = float64(r.n) / elapsed.Seconds()
	return r
}
