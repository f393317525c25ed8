package memory

import (
	"sync/atomic"
	"testing"

	"github.com/loomctx/loom/tokens"
)

// bpeCounter counts exactly with loom's tokens package (checked there
// against OpenAI's tiktoken), uncached, and remembers how many times it
// was asked. (tiktoken-go itself is not the reference: it counts "\x7f"
// as no token at all.)
type bpeCounter struct {
	name  string
	inner tokens.Counter
	calls atomic.Int64
}

func newBPE(t testing.TB, encoding string) *bpeCounter {
	t.Helper()
	c, err := tokens.Uncached(encoding)
	if err != nil {
		t.Fatal(err)
	}
	return &bpeCounter{name: encoding, inner: c}
}

func (c *bpeCounter) Name() string { return c.name }

func (c *bpeCounter) Count(s string) int {
	c.calls.Add(1)
	return c.inner.Count(s)
}

// byteCounter charges one token per byte: easy to reason about by hand.
type byteCounter struct{}

func (byteCounter) Count(s string) int { return len(s) }
