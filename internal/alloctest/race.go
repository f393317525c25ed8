//go:build race

package alloctest

// Race is whether the binary was built with the race detector, which
// changes what code allocates (sync.Pool drops items at random, and
// instrumented code keeps more on the heap): bounds measured then say
// nothing about a release build.
const Race = true
