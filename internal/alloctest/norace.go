//go:build !race

package alloctest

// Race is whether the binary was built with the race detector (see
// race.go).
const Race = false
