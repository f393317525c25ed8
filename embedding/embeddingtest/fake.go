// Package embeddingtest is a fake OpenAI-compatible /v1/embeddings
// endpoint for tests: vectors made from the text's words by hashing, so
// the same text always gets the same vector, texts that share words point
// the same way, and words given one meaning (Synonyms) count as one.
package embeddingtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"
)

// Dims is the length of the fake's vectors unless Fake.Dims says
// otherwise.
const Dims = 64

// Fake is a running fake endpoint.
type Fake struct {
	*httptest.Server
	// Synonyms map a word to the word whose meaning it shares.
	Synonyms map[string]string
	// Dims is the length of the vectors; set it before the first call.
	Dims int

	calls, texts atomic.Int64
	mu           sync.Mutex
	down         bool
	reply        func(w http.ResponseWriter, inputs []string) bool
	auth         []string
}

// New starts a fake endpoint, stopped when t ends. Its base URL (for
// memory.embeddings.base_url) is URL + "/v1".
func New(t testing.TB) *Fake {
	f := &Fake{Synonyms: map[string]string{}, Dims: Dims}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// BaseURL is what memory.embeddings.base_url names.
func (f *Fake) BaseURL() string { return f.URL + "/v1" }

// SetDown makes the endpoint answer 503 (true) or work again (false).
func (f *Fake) SetDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// SetReply makes fn answer the requests it returns true for, in place of
// the fake's own vectors: a test's hostile reply.
func (f *Fake) SetReply(fn func(w http.ResponseWriter, inputs []string) bool) {
	f.mu.Lock()
	f.reply = fn
	f.mu.Unlock()
}

// Calls counts the requests, Texts the texts embedded.
func (f *Fake) Calls() int64 { return f.calls.Load() }
func (f *Fake) Texts() int64 { return f.texts.Load() }

// Auth returns the Authorization headers received, in order.
func (f *Fake) Auth() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	down, reply := f.down, f.reply
	f.mu.Unlock()
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if down {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if reply != nil && reply(w, req.Input) {
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	for i, text := range req.Input {
		out.Data = append(out.Data, item{"embedding", i, f.Vector(text)})
	}
	f.texts.Add(int64(len(req.Input)))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// Vector is the fake's vector of text: for each word (lower-cased, its
// synonym's meaning taken), +1 at one hashed position and -1 at another,
// scaled to length 1; a text with no word points along the first axis.
func (f *Fake) Vector(text string) []float32 {
	dims := uint64(f.Dims)
	v := make([]float64, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if s, ok := f.Synonyms[w]; ok {
			w = s
		}
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		v[x%dims]++
		v[(x>>32)%dims]--
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	out := make([]float32, dims)
	if n == 0 {
		out[0] = 1
		return out
	}
	for i, x := range v {
		out[i] = float32(x / math.Sqrt(n))
	}
	return out
}
