package memory

import (
	"sync"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// bpeCounter counts with tiktoken-go directly, an exact o200k_base or
// cl100k_base count, and remembers how many times it was asked.
type bpeCounter struct {
	name  string
	codec tokenizer.Codec
	mu    sync.Mutex
	calls int
}

func newBPE(t testing.TB, enc tokenizer.Encoding) *bpeCounter {
	t.Helper()
	c, err := tokenizer.Get(enc)
	if err != nil {
		t.Fatal(err)
	}
	return &bpeCounter{name: string(enc), codec: c}
}

func (c *bpeCounter) Name() string { return c.name }

func (c *bpeCounter) Count(s string) int {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	n, err := c.codec.Count(s)
	if err != nil {
		panic(err)
	}
	return n
}

// byteCounter charges one token per byte: easy to reason about by hand.
type byteCounter struct{}

func (byteCounter) Count(s string) int { return len(s) }
