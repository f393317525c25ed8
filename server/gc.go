package server

import (
	"context"
	"os"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// The collector's setting for a long-running server. With Go's default
// (GOGC=100) a collection starts when the heap has grown by as much as is
// live. A server's live heap is small — some 8 MiB serving the large
// benchmark workspace — while each request allocates tens of KiB, so the
// default collected many times a second: about 6% of the gateway's CPU at
// 32 clients (bench/gateway, perf), against 1.5% at GOGC=400. TuneGC
// therefore lets the heap grow by up to gcHeadroom beyond what is live
// before collecting, but never by more than maxGCPercent of it, nor by less
// than Go's default: a small heap gets GOGC=400 (40 MiB at 8 MiB live),
// and from 64 MiB live the default holds, so a server holding many large
// workspaces does not grow by hundreds of MiB. A GOGC or GOMEMLIMIT set by
// the operator wins and turns this off.
const (
	gcHeadroom   = 64 << 20
	maxGCPercent = 400
	minGCPercent = 100
	gcRetune     = time.Second
)

// gcPercentFor is the GC percent for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	return int(min(max(gcHeadroom*100/live, minGCPercent), maxGCPercent))
}

// TuneGC sets the collector for a long-running server (see gcHeadroom) and
// retunes it each second as the live heap changes, until ctx ends; the
// setting it found is then put back. It does nothing when GOGC or
// GOMEMLIMIT is set.
func TuneGC(ctx context.Context) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	set := func(cur int) int {
		if p := gcPercentFor(liveHeap()); p != cur {
			debug.SetGCPercent(p)
			return p
		}
		return cur
	}
	orig := debug.SetGCPercent(minGCPercent)
	cur := set(minGCPercent)
	go func() {
		t := time.NewTicker(gcRetune)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				debug.SetGCPercent(orig)
				return
			case <-t.C:
				cur = set(cur)
			}
		}
	}()
}

// liveHeap is the heap the last collection found live, 0 before the first.
func liveHeap() uint64 {
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(sample)
	if sample[0].Value.Kind() == rtmetrics.KindUint64 {
		return sample[0].Value.Uint64()
	}
	return 0
}
