// Package alloctest measures how much a piece of code allocates, for tests
// that bound a request decoder's memory by the size of the body it reads.
package alloctest

import (
	"runtime"
	"testing"
)

// Allocated is how many bytes f allocates: an upper bound on how much the
// heap grows while it runs. Nothing else should run meanwhile (the count
// is the process's), so callers are not parallel tests.
func Allocated(f func()) uint64 {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// Bound runs decode, which reads a body of size bytes, logs what it
// allocated as a multiple of size, and fails t when that is over limit.
// Under the race detector it skips t, saying so: the figures would not be
// a release build's (.ci/run checks the bounds in a build without it).
func Bound(t testing.TB, name string, size int, limit float64, decode func()) {
	t.Helper()
	if Race {
		t.Skip("allocation bounds are measured without -race (go test -run PeakMemory); the race detector changes what code allocates")
	}
	ratio := float64(Allocated(decode)) / float64(size)
	t.Logf("%s: body %d bytes, decoding allocated %.2f times that", name, size, ratio)
	if ratio > limit {
		t.Errorf("%s: decoding allocated %.1f times the body, over %g", name, ratio, limit)
	}
}
