// Package loadgen is the part of bench/serve's and bench/gateway's load
// generators that does not depend on what they send: an HTTP client sized
// for a number of connections, a closed loop, an open loop on a fixed
// schedule, and a process's CPU time from /proc.
package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Client returns a client that keeps conc connections to one host and does
// not ask for compression, and the function that closes its idle
// connections.
func Client(conc int) (*http.Client, func()) {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc, DisableCompression: true}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, tr.CloseIdleConnections
}

// ClosedLoop runs conc workers for dur; each sends its next request as
// soon as the last one is answered, until ctx is done. It returns when
// every worker has, with the time it started.
func ClosedLoop(conc int, dur time.Duration, worker func(ctx context.Context)) (begin time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	begin = time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() { worker(ctx) })
	}
	wg.Wait()
	return begin
}

// OpenLoop offers rate requests per second for dur over conc workers, on a
// fixed schedule: request i is due at the start plus i/rate, whether or not
// the answers to earlier ones have come. Each worker ranges over due, which
// waits until a request's due time and yields it, so that latency can run
// from when the request was due rather than from when it was sent: below
// the machine's capacity this measures what a request costs, not how long
// a closed loop's queue is. It returns the time it started.
func OpenLoop(conc int, dur time.Duration, rate float64, worker func(due iter.Seq[time.Time])) (begin time.Time) {
	n := int(rate * dur.Seconds())
	ch := make(chan time.Time, conc)
	begin = time.Now()
	go func() {
		for i := range n {
			ch <- begin.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		}
		close(ch)
	}()
	due := func(yield func(time.Time) bool) {
		for t := range ch {
			time.Sleep(time.Until(t))
			if !yield(t) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() { worker(due) })
	}
	wg.Wait()
	return begin
}

// CPUTime is a process's user plus system CPU time so far, in seconds,
// from /proc (0 where there is none).
func CPUTime(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's ")": state is field 3; utime and
	// stime are 14 and 15, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st float64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return (ut + st) / 100
}
