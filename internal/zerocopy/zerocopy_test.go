package zerocopy_test

import (
	"testing"
	"unsafe"

	"github.com/loomctx/loom/internal/zerocopy"
)

// String shares the slice's bytes (no copy is made) and gives the same text
// as a copy would; an empty or nil slice is the empty string.
func TestStringSharesTheBytes(t *testing.T) {
	b := []byte("a file's contents\n")
	s := zerocopy.String(b)
	if s != "a file's contents\n" {
		t.Fatalf("got %q", s)
	}
	if unsafe.StringData(s) != &b[0] {
		t.Fatal("the string is a copy")
	}
	if zerocopy.String(nil) != "" || zerocopy.String(b[:0]) != "" {
		t.Fatal("an empty slice is not the empty string")
	}
}

// Converting allocates nothing, which is all the package is for.
func TestStringAllocatesNothing(t *testing.T) {
	b := make([]byte, 1<<16)
	if n := testing.AllocsPerRun(100, func() { _ = zerocopy.String(b) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
