// Package zerocopy holds loom's one conversion of bytes to a string without
// a copy. It is for a buffer that its owner has just filled and gives up for
// good: a file's contents read into a fresh slice, or a listing decoded
// from one. Go strings are immutable, so writing such a buffer after the
// conversion would change a string under everyone holding it; each caller
// therefore converts only a buffer it made itself, in the same function,
// and keeps no other reference to it. Pooled or reused memory never comes
// here.
package zerocopy

import "unsafe"

// String returns b's bytes as a string without copying them. The caller
// gives b up: nothing may write to its bytes again.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
