package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomctx/loom/bench/internal/loadgen"
)

// The -protocols mode: the same turn (a system text, one exchange of
// history, a question; the upstream's 2 KiB streamed reply) sent straight
// to the upstream, and through loom as a Chat Completions, a Responses
// and a Messages request, streamed, at 1 client and at -c, each client on
// a session of its own (turns of one session run one at a time, so a
// shared one would measure its lock). Every phase runs -rounds times,
// alternating targets, and the medians of the rounds are printed, with
// what each wire added to the direct request. The upstream is the same
// OpenAI-compatible fake for all: Chat Completions is relayed as it came,
// while Responses and Messages are re-encoded by loom from llm's client.

// target is one way of asking.
type target struct {
	name    string
	path    string // "" is the upstream itself
	body    []byte
	headers map[string]string
	// done checks a whole answer: its size and last bytes.
	done func(size int, tail []byte) bool
	// check, when set, checks the target once more before measuring.
	check func(url string) error
}

func protocolTargets() []target {
	chat := []byte(`{"model":"fake-model","stream":true,"temperature":0.2,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"What changed today?"}]}`)
	endsWith := func(event string) func(int, []byte) bool {
		return func(size int, tail []byte) bool { return size > len(reply)/2 && bytes.Contains(tail, []byte(event)) }
	}
	return []target{
		{name: "direct", body: chat, done: wholeReply},
		{name: "chat", path: "/v1/chat/completions", body: chat, done: wholeReply},
		{name: "responses", path: "/v1/responses", done: endsWith("response.completed"),
			body: []byte(`{"model":"fake-model","stream":true,"temperature":0.2,"instructions":"You are terse.","input":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"What changed today?"}]}`)},
		{name: "messages", path: "/v1/messages", headers: map[string]string{"Anthropic-Version": "2023-06-01"}, done: endsWith("message_stop"),
			body: []byte(`{"model":"fake-model","max_tokens":1024,"stream":true,"temperature":0.2,"system":"You are terse.","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"What changed today?"}]}`)},
	}
}

// runTargets measures targets, the first of them the upstream itself, as
// the -protocols and -fit modes do.
func runTargets(loom, ws string, conc int, dur time.Duration, rounds int, targets []target, extraYAML string) error {
	up, srv, upAddr, addr, err := start(loom, ws, extraYAML)
	if err != nil {
		return err
	}
	defer up.Process.Kill()
	defer srv.Process.Kill()
	url := func(t target) string {
		if t.path == "" {
			return "http://" + upAddr + "/v1/chat/completions"
		}
		return "http://" + addr + t.path
	}
	// One request each, checked, before measuring.
	for _, t := range targets {
		var r result
		if !sendTo(http.DefaultClient, url(t), t, t.headers, make([]byte, 32<<10), time.Now(), &r) {
			return fmt.Errorf("%s: the check request failed", t.name)
		}
		if t.check != nil {
			if err := t.check(url(t)); err != nil {
				return fmt.Errorf("%s: %v", t.name, err)
			}
		}
	}
	fmt.Printf("workspace %s, streamed reply of 2 KiB of text, %s per phase, %d rounds; medians of the rounds\n\n", ws, dur, rounds)
	fmt.Printf("%-10s %7s %9s %7s | %-30s | %-30s | %8s\n", "", "", "", "", "time to first byte, ms", "wholeReply response, ms", "loom CPU")
	fmt.Printf("%-10s %7s %9s %7s | %8s %8s %12s | %8s %8s %12s | %8s\n", "target", "clients", "req/s", "errors", "p50", "p99", "added p50", "p50", "p99", "added p50", "µs/req")
	var sessions atomic.Int64
	for _, c := range []int{1, conc} {
		stats := make([][]*result, len(targets))
		for range rounds {
			for i, t := range targets {
				cpu0 := loadgen.CPUTime(srv.Process.Pid)
				r := loadTarget(url(t), t, c, dur, &sessions)
				r.cpu = perRequest(loadgen.CPUTime(srv.Process.Pid)-cpu0, r)
				stats[i] = append(stats[i], r)
			}
		}
		direct := medians(stats[0])
		for i, t := range targets {
			m := medians(stats[i])
			cpu := "-"
			if t.path != "" {
				cpu = strconv.FormatFloat(m.cpu*1e6, 'f', 0, 64)
			}
			fmt.Printf("%-10s %7d %9.0f %7d | %8.3f %8.3f %12.3f | %8.3f %8.3f %12.3f | %8s\n", t.name, c, m.rps, m.errs,
				m.ttfb50, m.ttfb99, m.ttfb50-direct.ttfb50, m.total50, m.total99, m.total50-direct.total50, cpu)
		}
	}
	return nil
}

// summary is a phase's figures (times in ms), medians over the rounds.
type summary struct {
	rps                              float64
	errs                             int
	ttfb50, ttfb99, total50, total99 float64
	cpu                              float64
}

func medians(rs []*result) summary {
	med := func(f func(r *result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	errs := 0
	for _, r := range rs {
		errs += r.errs
	}
	return summary{rps: med(func(r *result) float64 { return r.rps }), errs: errs,
		ttfb50: med(func(r *result) float64 { return ms(r.p(r.ttfb, .5)) }), ttfb99: med(func(r *result) float64 { return ms(r.p(r.ttfb, .99)) }),
		total50: med(func(r *result) float64 { return ms(r.p(r.total, .5)) }), total99: med(func(r *result) float64 { return ms(r.p(r.total, .99)) }),
		cpu: med(func(r *result) float64 { return r.cpu })}
}

// loadTarget is load for a target: closed loop, conc clients, each with a
// session of its own.
func loadTarget(url string, t target, conc int, dur time.Duration, sessions *atomic.Int64) *result {
	client, done := loadgen.Client(conc)
	defer done()
	var mu sync.Mutex
	total := &result{}
	begin := loadgen.ClosedLoop(conc, dur, func(ctx context.Context) {
		headers := map[string]string{"X-Loom-Session": "bench-" + strconv.FormatInt(sessions.Add(1), 10)}
		for k, v := range t.headers {
			headers[k] = v
		}
		var one result
		buf := make([]byte, 32<<10)
		// Each request asks a question of its own, so that every wire
		// stores every turn: the same conversation again would be taken
		// for a retry of the stored turn by Chat Completions and Messages
		// (matched by its hash) but not by Responses (a new response id).
		question := []byte("What changed today?")
		this := t
		for n := 0; ctx.Err() == nil; n++ {
			this.body = bytes.Replace(t.body, question, []byte("What changed today? ("+strconv.Itoa(n)+")"), 1)
			if !sendTo(client, url, this, headers, buf, time.Now(), &one) && ctx.Err() == nil {
				one.errs++
			}
		}
		total.merge(&mu, &one)
	})
	return total.finish(begin)
}

// sendTo is send for a target, whose check reads the answer.
func sendTo(client *http.Client, url string, t target, headers map[string]string, buf []byte, at time.Time, r *result) bool {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(t.body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return false
	}
	n, err := res.Body.Read(buf)
	first := time.Since(at)
	size := n
	tail := append([]byte(nil), buf[:n]...)
	for err == nil {
		n, err = res.Body.Read(buf)
		size += n
		tail = append(tail, buf[:n]...)
		if len(tail) > 256 {
			tail = tail[len(tail)-256:]
		}
	}
	res.Body.Close()
	if err != io.EOF || res.StatusCode != 200 || !t.done(size, tail) {
		return false
	}
	r.ttfb = append(r.ttfb, first)
	r.total = append(r.total, time.Since(at))
	return true
}
