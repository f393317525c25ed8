package gateway

import (
	"bytes"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// allocated is how many bytes f allocates: an upper bound on how much the
// heap grows while it runs.
func allocated(f func()) uint64 {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// chatBody is a request of n user and assistant messages of size bytes of
// text each.
func chatBody(n, size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"m","stream":true,"messages":[`)
	text := strings.Repeat("x", size)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b.WriteString(`{"role":"` + role + `","content":"` + text + `"}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// Decoding a gateway request allocates at most 4 times its body, for a
// body of a million tiny messages (refused past maxRequestMessages before
// they are decoded; it took 36 times the body) as for long histories.
func TestDecodePeakMemory(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	for _, c := range []struct {
		name    string
		n, size int
		ok      bool
	}{
		{"a million tiny messages", 1_000_000, 1, false},
		{"the most messages, tiny", maxRequestMessages, 1, true},
		{"the most messages, 300 bytes", maxRequestMessages, 300, true},
		{"7,000 messages of 4 KiB", 7_000, 4 << 10, true},
		{"one message of 16 MiB", 1, 16 << 20, true},
	} {
		body := chatBody(c.n, c.size)
		var err error
		n := allocated(func() { _, err = decode(r, body) })
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v", c.name, err)
		}
		ratio := float64(n) / float64(len(body))
		t.Logf("%s: body %d bytes, decoding allocated %.2f times that", c.name, len(body), ratio)
		if ratio > 4 && len(body) > 1<<20 {
			t.Errorf("%s: decoding allocated %.1f times the body, over 4", c.name, ratio)
		}
	}
}
