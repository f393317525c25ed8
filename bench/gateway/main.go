// Command gateway-load measures what loom's gateway adds to a chat
// completion (bench/gateway).
//
// A fake OpenAI upstream in its own process answers every request at once
// with the same streamed reply (about 2 KB of chunks). `loom serve` runs on
// a workspace whose loom.yaml points at it. C concurrent clients then send
// streamed chat completions for D, first straight to the upstream, then
// through loom, in the same run, and the command prints, for each, req/s,
// errors, and time to first byte and to the whole response (p50, p99, max),
// then what loom added: the difference of the two at each percentile. On a
// small machine the closed loop at C clients measures mostly its own queue
// for the CPU, which the load generator, the upstream and loom share; so
// both are then also driven open-loop, at one fixed rate (-rate, by default
// a third of loom's closed-loop throughput), with times counted from each
// request's due time.
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
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/bench/internal/loadgen"
)

func main() {
	var (
		loom     = flag.String("loom", "loom", "the loom binary")
		ws       = flag.String("w", "", "workspace folder (its loom.yaml is written)")
		conc     = flag.Int("c", 32, "concurrent clients")
		dur      = flag.Duration("d", 30*time.Second, "duration of each phase")
		upstream = flag.Bool("upstream", false, "internal: run the fake upstream")
		rate     = flag.Float64("rate", 0, "requests per second of the open-loop phases; 0 means a third of loom's closed-loop throughput")
		sess     = flag.String("session", "bench", "X-Loom-Session of the requests through loom, with the run's start time added so that every run starts an empty session; empty sends none (nothing is saved)")
		protos   = flag.Bool("protocols", false, "compare the wire formats instead: the same turn as Chat Completions, Responses and Messages, at 1 and -c clients, each client its own session")
		fitting  = flag.Bool("fit", false, "measure context-window fitting instead: a 200-message request counted only, fitted with nothing to drop, and fitted with drops, at 1 and -c clients")
		rounds   = flag.Int("rounds", 3, "with -protocols or -fit: rounds of every phase, alternating; medians are printed")
		yaml     = flag.String("yaml", "", "more loom.yaml for loom serve, top-level keys not written otherwise (for example \"memory:\\n  retrieval: priority\")")
	)
	flag.Parse()
	if *upstream {
		serveUpstream()
		return
	}
	if *ws == "" {
		fmt.Fprintln(os.Stderr, "gateway-load: -w DIR is required")
		os.Exit(2)
	}
	if *protos || *fitting {
		targets, extra := protocolTargets(), ""
		if *fitting {
			targets, extra = fitTargets()
		}
		if err := runTargets(*loom, *ws, *conc, *dur, *rounds, targets, extra+*yaml); err != nil {
			fmt.Fprintln(os.Stderr, "gateway-load:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*loom, *ws, *conc, *dur, *rate, *sess, *yaml); err != nil {
		fmt.Fprintln(os.Stderr, "gateway-load:", err)
		os.Exit(1)
	}
}

// reply is the upstream's fixed stream: 2 KiB of text in 16 chunks of 128
// characters.
var reply = func() []byte {
	var b bytes.Buffer
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := 0; i < 16; i++ {
		piece, _ := json.Marshal(strings.Repeat(string(rune('a'+i%26)), 127) + " ")
		fmt.Fprintf(&b, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`+"\n\n", piece)
	}
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	return b.Bytes()
}()

func serveUpstream() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(reply)
	}))
}

func run(loom, ws string, conc int, dur time.Duration, rate float64, sess, extraYAML string) error {
	up, srv, upAddr, addr, err := start(loom, ws, extraYAML)
	if err != nil {
		return err
	}
	defer up.Process.Kill()
	defer srv.Process.Kill()
	return measure(up, srv, ws, upAddr, addr, conc, dur, rate, sess)
}

// start runs the fake upstream and loom serve on ws, pointed at it (with
// extra added to its loom.yaml), and waits until loom is ready.
func start(loom, ws, extra string) (up, srv *exec.Cmd, upAddr, addr string, err error) {
	self, _ := os.Executable()
	up = exec.Command(self, "-upstream")
	out, err := up.StdoutPipe()
	if err != nil {
		return nil, nil, "", "", err
	}
	if err := up.Start(); err != nil {
		return nil, nil, "", "", err
	}
	fail := func(err error) (*exec.Cmd, *exec.Cmd, string, string, error) {
		up.Process.Kill()
		if srv != nil && srv.Process != nil {
			srv.Process.Kill()
		}
		return nil, nil, "", "", err
	}
	upAddr, err = bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fail(err)
	}
	upAddr = strings.TrimSpace(upAddr)
	yaml := fmt.Sprintf("llm:\n  provider: openai\n  base_url: http://%s/v1\n  model: fake-model\n  extraction:\n    enabled: false\n  consolidation:\n    enabled: false\n%s", upAddr, extra)
	if err := os.WriteFile(filepath.Join(ws, "loom.yaml"), []byte(yaml), 0o644); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	srv = exec.Command(loom, "serve", "-w", ws, "--addr", addr, "--log-level", "warn")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return fail(err)
	}
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if res, err := http.Get("http://" + addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Since(start) > 30*time.Second {
			return fail(errors.New("loom serve never became ready"))
		}
	}
	return up, srv, upAddr, addr, nil
}

func measure(up, srv *exec.Cmd, ws, upAddr, addr string, conc int, dur time.Duration, rate float64, sess string) error {
	body := []byte(`{"model":"fake-model","stream":true,"temperature":0.2,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"What changed today?"}]}`)
	// One request each way, checked, before measuring.
	for _, u := range []string{"http://" + upAddr + "/v1/chat/completions", "http://" + addr + "/v1/chat/completions"} {
		res, err := http.Post(u, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Equal(got, reply) {
			return fmt.Errorf("%s: %d, %d bytes (want the upstream's %d bytes unchanged)", u, res.StatusCode, len(got), len(reply))
		}
	}
	viaHeaders := map[string]string{}
	if sess != "" {
		// A session of its own: one reused across runs grows by every
		// stored turn, and each run's figures would drift with its size.
		viaHeaders["X-Loom-Session"] = fmt.Sprintf("%s-%d", sess, time.Now().UnixNano())
	}
	fmt.Printf("workspace %s, %d clients, %s per phase, streamed reply of 2 KiB of text, %d bytes on the wire\n\n", ws, conc, dur, len(reply))
	fmt.Printf("%-8s %9s %7s | %-26s | %-26s\n", "", "", "", "time to first byte, ms", "whole response, ms")
	fmt.Printf("%-8s %9s %7s | %8s %8s %8s | %8s %8s %8s\n", "target", "req/s", "errors", "p50", "p99", "max", "p50", "p99", "max")
	var lastDirect, lastVia *result
	for _, c := range []int{1, conc} {
		// One client shows what loom adds to a request on an idle
		// server; conc clients, what it adds under load (queueing
		// included, on a machine the load generator shares).
		upCPU, genCPU := loadgen.CPUTime(up.Process.Pid), loadgen.CPUTime(os.Getpid())
		direct := load("http://"+upAddr+"/v1/chat/completions", body, nil, c, dur)
		direct.cpu = perRequest(loadgen.CPUTime(up.Process.Pid)-upCPU, direct)
		direct.genCPU = perRequest(loadgen.CPUTime(os.Getpid())-genCPU, direct)
		direct.print(fmt.Sprintf("direct/%d", c))
		loomCPU, upCPU, genCPU := loadgen.CPUTime(srv.Process.Pid), loadgen.CPUTime(up.Process.Pid), loadgen.CPUTime(os.Getpid())
		via := load("http://"+addr+"/v1/chat/completions", body, viaHeaders, c, dur)
		via.cpu = perRequest(loadgen.CPUTime(srv.Process.Pid)-loomCPU, via)
		via.upCPU = perRequest(loadgen.CPUTime(up.Process.Pid)-upCPU, via)
		via.genCPU = perRequest(loadgen.CPUTime(os.Getpid())-genCPU, via)
		via.print(fmt.Sprintf("loom/%d", c))
		added(direct, via)
		lastDirect, lastVia = direct, via
	}
	// Open loop: both targets at one fixed rate, a third of what loom
	// managed in the closed loop, so that neither is saturated (on a
	// shared machine half was at the knee some runs) and the added
	// latency is loom's work rather than a queue.
	if rate <= 0 {
		rate = lastVia.rps / 3
	}
	fmt.Printf("\nopen loop: %d connections, %.0f req/s offered to each, times from each request's due time\n", conc, rate)
	directAt := loadAt("http://"+upAddr+"/v1/chat/completions", body, nil, conc, dur, rate)
	directAt.print("direct@")
	viaAt := loadAt("http://"+addr+"/v1/chat/completions", body, viaHeaders, conc, dur, rate)
	viaAt.print("loom@")
	added(directAt, viaAt)
	fmt.Printf("\nthroughput through loom / direct at %d clients: %.2f\n", conc, lastVia.rps/lastDirect.rps)
	fmt.Printf("CPU per request at %d clients (user+system, whatever else loads the machine): loom %.0f µs; the upstream %.0f µs direct, %.0f µs behind loom (it reads loom's prompt); loom / upstream direct %.1f×\n",
		conc, lastVia.cpu*1e6, lastDirect.cpu*1e6, lastVia.upCPU*1e6, lastVia.cpu/lastDirect.cpu)
	fmt.Printf("the load generator's own CPU per request (the same client both ways): %.0f µs direct, %.0f µs through loom\n",
		lastDirect.genCPU*1e6, lastVia.genCPU*1e6)
	return nil
}

// added prints what going through loom added at each percentile.
func added(direct, via *result) {
	fmt.Printf("%-8s %9s %7s | %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f\n", "added", "", "",
		ms(via.p(via.ttfb, .5)-direct.p(direct.ttfb, .5)), ms(via.p(via.ttfb, .99)-direct.p(direct.ttfb, .99)), ms(via.p(via.ttfb, 1)-direct.p(direct.ttfb, 1)),
		ms(via.p(via.total, .5)-direct.p(direct.total, .5)), ms(via.p(via.total, .99)-direct.p(direct.total, .99)), ms(via.p(via.total, 1)-direct.p(direct.total, 1)))
}

type result struct {
	cpu         float64 // seconds of the serving process's CPU per request
	upCPU       float64 // the upstream's, in the phase through loom
	genCPU      float64 // this load generator's own
	rps         float64
	errs        int
	ttfb, total []time.Duration
}

func (r *result) p(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	return xs[min(len(xs)-1, int(q*float64(len(xs))))]
}

func perRequest(cpu float64, r *result) float64 {
	if len(r.total) == 0 {
		return 0
	}
	return cpu / float64(len(r.total)+r.errs)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r *result) print(name string) {
	fmt.Printf("%-8s %9.0f %7d | %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f\n", name, r.rps, r.errs,
		ms(r.p(r.ttfb, .5)), ms(r.p(r.ttfb, .99)), ms(r.p(r.ttfb, 1)), ms(r.p(r.total, .5)), ms(r.p(r.total, .99)), ms(r.p(r.total, 1)))
}

func load(url string, body []byte, headers map[string]string, conc int, dur time.Duration) *result {
	client, done := loadgen.Client(conc)
	defer done()
	var mu sync.Mutex
	total := &result{}
	begin := loadgen.ClosedLoop(conc, dur, func(ctx context.Context) {
		var one result
		buf := make([]byte, 32<<10)
		for ctx.Err() == nil {
			if !send(client, url, body, headers, buf, time.Now(), &one) && ctx.Err() == nil {
				one.errs++
			}
		}
		total.merge(&mu, &one)
	})
	return total.finish(begin)
}

// loadAt offers rate requests per second over conc connections for dur
// (loadgen.OpenLoop); each request's times run from when it was due.
func loadAt(url string, body []byte, headers map[string]string, conc int, dur time.Duration, rate float64) *result {
	client, done := loadgen.Client(conc)
	defer done()
	var mu sync.Mutex
	total := &result{}
	begin := loadgen.OpenLoop(conc, dur, rate, func(due iter.Seq[time.Time]) {
		var one result
		buf := make([]byte, 32<<10)
		for t := range due {
			if !send(client, url, body, headers, buf, t, &one) {
				one.errs++
			}
		}
		total.merge(&mu, &one)
	})
	return total.finish(begin)
}

// send posts one request and reads the whole streamed answer, adding its
// time to first byte and to the end, counted from t, to r; false is an
// error (the answer must be the upstream's whole reply).
func send(client *http.Client, url string, body []byte, headers map[string]string, buf []byte, t time.Time, r *result) bool {
	return sendTo(client, url, target{body: body, done: wholeReply}, headers, buf, t, r)
}

// wholeReply checks an answer that is the upstream's reply as it sent it.
func wholeReply(size int, _ []byte) bool { return size == len(reply) }

// merge adds one client's times and errors to r.
func (r *result) merge(mu *sync.Mutex, one *result) {
	mu.Lock()
	r.ttfb = append(r.ttfb, one.ttfb...)
	r.total = append(r.total, one.total...)
	r.errs += one.errs
	mu.Unlock()
}

// finish sorts the times and works out the rate since begin.
func (r *result) finish(begin time.Time) *result {
	slices.Sort(r.ttfb)
	slices.Sort(r.total)
	r.rps = float64(len(r.total)) / time.Since(begin).Seconds()
	return r
}
