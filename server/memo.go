package server

import (
	"sync"

	"github.com/loomctx/loom/tokens"
)

// memoCounter remembers the counts of the last few long texts it counted.
// A turn counts its whole system prompt for the cache report, and that
// prompt is the same long text request after request: comparing it with a
// remembered one costs a memcmp, counting it again a tokenizer pass.
type memoCounter struct {
	c  tokens.Counter
	mu sync.Mutex
	// ring of the last memoSlots long texts and their counts
	texts [memoSlots]string
	ns    [memoSlots]int
	next  int
}

const (
	memoSlots   = 8
	memoMinSize = 2048 // shorter texts are counted every time
)

// MemoCounter wraps c with a memory of the last few long texts' counts.
// It is safe for concurrent use when c is.
func MemoCounter(c tokens.Counter) tokens.Counter {
	if m, ok := c.(*memoCounter); ok {
		return m
	}
	return &memoCounter{c: c}
}

func (m *memoCounter) Count(s string) int {
	if len(s) < memoMinSize {
		return m.c.Count(s)
	}
	m.mu.Lock()
	for i := range m.texts {
		if len(m.texts[i]) == len(s) && m.texts[i] == s {
			n := m.ns[i]
			m.mu.Unlock()
			return n
		}
	}
	m.mu.Unlock()
	n := m.c.Count(s)
	m.mu.Lock()
	m.texts[m.next], m.ns[m.next] = s, n
	m.next = (m.next + 1) % memoSlots
	m.mu.Unlock()
	return n
}

// Name returns the wrapped counter's encoding name, as tokens counters do.
func (m *memoCounter) Name() string { return tokens.NameOf(m.c) }
