package server

import (
	"context"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{{0, 400}, {8 << 20, 400}, {16 << 20, 400}, {32 << 20, 200}, {64 << 20, 100}, {1 << 30, 100}} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("live %d MiB: %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// gcPercent reads the current setting.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestTuneGCSetsAndRestores(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := gcPercent()
	ctx, cancel := context.WithCancel(context.Background())
	TuneGC(ctx)
	if got := gcPercent(); got != gcPercentFor(liveHeap()) {
		t.Errorf("GC percent %d after TuneGC, want %d", got, gcPercentFor(liveHeap()))
	}
	cancel()
	for deadline := time.Now().Add(5 * time.Second); gcPercent() != before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d after the context ended, want %d back", gcPercent(), before)
		}
	}
}

func TestTuneGCLeavesOperatorsSetting(t *testing.T) {
	t.Setenv("GOGC", "150")
	before := gcPercent()
	TuneGC(t.Context())
	if got := gcPercent(); got != before {
		t.Errorf("GOGC set: TuneGC changed the percent %d → %d", before, got)
	}
}
