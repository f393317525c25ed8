package fit_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/internal/fittest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/tokens"
)

// BenchmarkBuild200 builds a 200-message turn (50 tool rounds, some 19k
// tokens) plainly (the floor), fitted into a window it fits (the counting
// alone), and fitted into one it does not (counting, dropping and the
// second build). The counter is the shared cached one a server uses, so
// the history's counts are found, not made, as they are turn after turn.
func BenchmarkBuild200(b *testing.B) {
	c, _ := tokens.Get(tokens.O200kBase)
	turn := messages.Turn{System: fittest.Filler(9, 3000), History: fittest.Conversation(50, 300), Message: "go on",
		Runtime: messages.Runtime{Now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Location: time.UTC}}
	bopts := messages.Options{Counter: c}
	if _, err := messages.Build(turn, bopts); err != nil { // warms the counter's cache, as earlier turns would
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		window int
	}{{"plain", 0}, {"fits", 128000}, {"drops", 8000}} {
		b.Run(fmt.Sprint(tc.name), func(b *testing.B) {
			fopts := fit.Options{Window: tc.window, Reserve: 500, Counter: c}
			for b.Loop() {
				if _, _, err := fit.Build(turn, bopts, fopts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFitOverhead alternates the three builds of BenchmarkBuild200
// in one loop, so that a machine shared with other work slows them alike,
// and reports each one's process CPU time per build (steadier than the
// time taken when other processes want the CPU) and what fitting adds to
// the plain build when the request fits ("fit-cpu-ns/op") and when it
// drops history ("drop-cpu-ns/op").
func BenchmarkFitOverhead(b *testing.B) {
	c, _ := tokens.Get(tokens.O200kBase)
	turn := messages.Turn{System: fittest.Filler(9, 3000), History: fittest.Conversation(50, 300), Message: "go on",
		Runtime: messages.Runtime{Now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Location: time.UTC}}
	bopts := messages.Options{Counter: c}
	fits := fit.Options{Window: 128000, Reserve: 500, Counter: c}
	drops := fit.Options{Window: 8000, Reserve: 500, Counter: c}
	if _, _, err := fit.Build(turn, bopts, drops); err != nil { // warms the counter's cache, as earlier turns would
		b.Fatal(err)
	}
	var plain, fitted, dropped time.Duration
	for b.Loop() {
		t0 := cpuTime()
		messages.Build(turn, bopts)
		t1 := cpuTime()
		fit.Build(turn, bopts, fits)
		t2 := cpuTime()
		fit.Build(turn, bopts, drops)
		t3 := cpuTime()
		plain, fitted, dropped = plain+t1-t0, fitted+t2-t1, dropped+t3-t2
	}
	n := float64(b.N)
	b.ReportMetric(float64(plain.Nanoseconds())/n, "plain-cpu-ns/op")
	b.ReportMetric(float64((fitted-plain).Nanoseconds())/n, "fit-cpu-ns/op")
	b.ReportMetric(float64((dropped-plain).Nanoseconds())/n, "drop-cpu-ns/op")
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFit is Fit alone on a built 200-message list that fits.
func BenchmarkFit(b *testing.B) {
	c, _ := tokens.Get(tokens.O200kBase)
	res, err := messages.Build(messages.Turn{System: fittest.Filler(9, 3000), History: fittest.Conversation(50, 300), Message: "go on"}, messages.Options{})
	if err != nil {
		b.Fatal(err)
	}
	opts := fit.Options{Window: 128000, Reserve: 500, Counter: c}
	fit.Fit(res.Messages, opts)
	for b.Loop() {
		fit.Fit(res.Messages, opts)
	}
}
