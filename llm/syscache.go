package llm

import (
	"bytes"
	"sync"
)

// A gateway sends the same long system prompt (some 100 KB on a large
// workspace) request after request; escaping it as JSON, and encoding/json
// scanning that output again, was most of what a request body cost. So
// each client keeps the encoded system part of its last few distinct
// prompts and puts it into the body built for the rest of the request.
// bodyPlain (each client's) encodes everything every time; the tests hold
// the two to the same bytes.

// systemCacheSize is how many distinct system prompts a client keeps
// encoded: a few users' prompts (their memories differ) served at once.
const systemCacheSize = 8

type systemCache struct {
	mu      sync.Mutex
	entries [systemCacheSize]systemEncoded
	next    int
}

// systemEncoded is one system prompt's encoding; at is the request's
// SystemCacheAt, which splits an Anthropic system into two blocks.
type systemEncoded struct {
	text string
	at   int
	enc  []byte
}

// get returns the encoding of the system text, kept or made by encode. The
// slice is shared: callers copy it, never change it. Comparing text with
// a kept prompt is cheap when both are the same string (Go compares the
// pointers first), as a gateway's kept prompt is.
func (c *systemCache) get(text string, at int, encode func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	for _, e := range c.entries {
		if e.enc != nil && e.at == at && len(e.text) == len(text) && e.text == text {
			c.mu.Unlock()
			return e.enc, nil
		}
	}
	c.mu.Unlock()
	enc, err := encode()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.entries[c.next] = systemEncoded{text: text, at: at, enc: enc}
	c.next = (c.next + 1) % systemCacheSize
	c.mu.Unlock()
	return enc, nil
}

// insertAt returns body with part put in at offset i: one copy of each.
func insertAt(body []byte, i int, part ...[]byte) []byte {
	n := len(body)
	for _, p := range part {
		n += len(p)
	}
	out := make([]byte, 0, n)
	out = append(out, body[:i]...)
	for _, p := range part {
		out = append(out, p...)
	}
	return append(out, body[i:]...)
}

// keyAfter is the offset just after the first `,"name":` in a body
// encoding/json wrote: the top-level key, since inside any string before
// it a quote is escaped. -1 when it is not there.
func keyAfter(body []byte, name string) int {
	k := `,"` + name + `":`
	i := bytes.Index(body, []byte(k))
	if i < 0 {
		return -1
	}
	return i + len(k)
}
