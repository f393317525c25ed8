// Package embedding gives memories vectors from an OpenAI-compatible
// /v1/embeddings endpoint (loom.yaml's memory.embeddings), so that a
// turn's recall can find a memory by meaning as well as by its words.
//
//   - [New] resolves the configuration, applying package llm's rule for
//     where a key may go (a workspace names an endpoint; only the operator
//     lets a key go to it), and returns an [Embedder].
//   - [Client] makes the calls. Every reply is untrusted: its size is
//     bounded before it is read, and its vectors checked (count, length,
//     finite values) before anything uses them.
//   - [Worker] writes the vectors of a [memory.VectorStore] in the
//     background: the memories without one are its queue, kept in the
//     store, so a memory write never waits for the endpoint, and a memory
//     written while it is down gets its vector when it is back.
//   - [Embedder.Similar] ranks a turn's memories by meaning for
//     [memory.RecallFor], which fuses that ranking with the ranking by
//     words; it is bounded by a short timeout and never fails the turn.
package embedding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/redact"
	"github.com/loomctx/loom/memory"
)

// Bounds on what is sent and read.
const (
	// MaxBatch is the most texts one call embeds.
	MaxBatch = 64
	// MaxInputBytes is how much of a text is sent, cut at a character
	// boundary: a memory may hold 64 KiB, over most models' input limit,
	// and its start says what it is about.
	MaxInputBytes = 8 << 10
	// maxErrorBody is how much of a failed reply's body an error quotes.
	maxErrorBody = 512
)

// ErrReply is wrapped by errors about a reply that is not what the
// embeddings API promises: too large, not JSON, the wrong number of
// vectors, vectors of the wrong length, or values that are not finite.
var ErrReply = errors.New("bad embeddings reply")

// StatusError is a reply with an HTTP status other than 200.
type StatusError struct {
	URL    string // redacted
	Status int
	Body   string // the start of the body, redacted
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("embedding: %s answered %d", e.URL, e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Permanent says whether the same request cannot succeed later: a client
// error other than 408 (timeout) and 429 (rate limit).
func (e *StatusError) Permanent() bool {
	return e.Status >= 400 && e.Status < 500 && e.Status != 408 && e.Status != 429
}

// Client calls one embeddings endpoint for one model. It is safe for
// concurrent use.
type Client struct {
	url, model, key string
	// dims is asked of the endpoint when set and required of every
	// vector; when 0, the first good reply fixes it (seen).
	dims int
	http *http.Client

	mu   sync.Mutex
	seen int
}

// ClientConfig is what a Client needs. BaseURL is the API's base: the
// request goes to BaseURL + "/embeddings". Key, when set, is sent as a
// bearer token; [New] checks where it may go, NewClient does not.
type ClientConfig struct {
	BaseURL, Model, Key string
	Dimensions          int
	// HTTP is the client to call with; nil is one that follows no
	// redirect (a redirect would carry the key to another host).
	HTTP *http.Client
}

// NewClient returns a client for c.
func NewClient(c ClientConfig) *Client {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Client{url: strings.TrimRight(c.BaseURL, "/") + "/embeddings", model: c.Model, key: c.Key, dims: c.Dimensions, http: hc}
}

// Model is the name under which the client's vectors are stored: the
// model, and the length asked for when one is (a model's vectors of two
// lengths are two spaces).
func (c *Client) Model() string {
	if c.dims > 0 {
		return c.model + "@" + strconv.Itoa(c.dims)
	}
	return c.model
}

// maxReply bounds the body of a reply for n texts: a vector of the
// longest allowed length written out as JSON numbers (at most 24 bytes
// each, "-1.2345678901234567e-05,"), and room for the rest.
func (c *Client) maxReply(n int) int64 {
	d := c.dims
	if d == 0 {
		d = config.MaxEmbeddingDimensions
	}
	return 64<<10 + int64(n)*int64(d)*24
}

// Embed returns the vectors of texts, in order. Each text is cut to
// MaxInputBytes; at most MaxBatch texts go in one call.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if len(texts) > MaxBatch {
		return nil, fmt.Errorf("embedding: %d texts in one call; at most %d", len(texts), MaxBatch)
	}
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = cut(t, MaxInputBytes)
	}
	req := struct {
		Model      string   `json:"model"`
		Input      []string `json:"input"`
		Dimensions int      `json:"dimensions,omitempty"`
	}{c.model, in, c.dims}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embedding: %s: %v", redact.URL(c.url), err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		hr.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("embedding: %s", redact.Credentials(err.Error(), c.key))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, &StatusError{URL: redact.URL(c.url), Status: resp.StatusCode, Body: redact.Credentials(strings.ToValidUTF8(strings.TrimSpace(string(b)), "?"), c.key)}
	}
	limit := c.maxReply(len(texts))
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("embedding: reading the reply of %s: %v", redact.URL(c.url), err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("%w: the reply of %s is over %d bytes for %d texts", ErrReply, redact.URL(c.url), limit, len(texts))
	}
	return c.parse(raw, len(texts))
}

// parse checks a reply's body and returns its n vectors in input order.
func (c *Client) parse(raw []byte, n int) ([][]float32, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w from %s: %s", ErrReply, redact.URL(c.url), fmt.Sprintf(format, args...))
	}
	var reply struct {
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return nil, bad("not the JSON of an embeddings list: %v", err)
	}
	if len(reply.Data) != n {
		return nil, bad("%d vectors for %d texts", len(reply.Data), n)
	}
	c.mu.Lock()
	want := c.dims
	if want == 0 {
		want = c.seen
	}
	c.mu.Unlock()
	out := make([][]float32, n)
	for i, d := range reply.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= n || out[at] != nil {
			return nil, bad("vector %d has index %d: want each of 0..%d once", i, at, n-1)
		}
		if len(d.Embedding) == 0 || len(d.Embedding) > config.MaxEmbeddingDimensions {
			return nil, bad("vector %d has %d values; want 1 to %d", at, len(d.Embedding), config.MaxEmbeddingDimensions)
		}
		if want == 0 {
			want = len(d.Embedding)
		}
		if len(d.Embedding) != want {
			return nil, bad("vector %d has %d values; want %d", at, len(d.Embedding), want)
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			v[j] = float32(x)
			if math.IsInf(float64(v[j]), 0) {
				return nil, bad("vector %d: value %d (%g) is out of float32's range", at, j, x)
			}
		}
		if err := memory.CheckVector(v); err != nil {
			return nil, bad("vector %d: %v", at, err)
		}
		out[at] = v
	}
	c.mu.Lock()
	if c.seen == 0 {
		c.seen = want
	}
	c.mu.Unlock()
	return out, nil
}

// cut is s cut to at most n bytes, at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
