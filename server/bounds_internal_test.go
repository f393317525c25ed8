package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
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

func jsonRequest(body []byte) *http.Request {
	r := httptest.NewRequest("POST", "http://127.0.0.1/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// Decoding a JSON route's request allocates at most 4 times its body (an
// upper bound on what it holds at once): the message list's history (to
// maxHistory messages, short or long) and a memory import, which streams;
// a turn's one 16 MiB string still takes 5 times.
func TestDecodePeakMemory(t *testing.T) {
	history := func(n, size int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"message":"hi","history":[`)
		text := strings.Repeat("x", size)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"role":"user","content":%q}`, text)
		}
		b.WriteString(`]}`)
		return b.Bytes()
	}
	memories := func(n, size int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"memories":[`)
		text := strings.Repeat("x", size)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"m%d","category":"global_rule","content":%q,"created_at":"2025-01-01T00:00:00Z"}`, i, text)
		}
		b.WriteString(`]}`)
		return b.Bytes()
	}
	for _, c := range []struct {
		name   string
		body   []byte
		decode func(body []byte) error
		limit  float64 // 4, but for the turn's one long string (see below)
	}{
		{"messages, 10,000 of 300 bytes", history(maxHistory, 300), decodeMessages, 4},
		{"messages, 5,000 of 4 KiB", history(5000, 4<<10), decodeMessages, 4},
		{"turn, 16 MiB message", []byte(`{"message":"` + strings.Repeat("y", 16<<20) + `"}`), func(b []byte) error { var q TurnRequest; return DecodeJSON(jsonRequest(b), &q) },
			// Not within 4 yet: DecodeJSON's json.Decoder grows its own
			// buffer to the value by doubling, then copies the string.
			5.5},
		{"import, 100,000 memories of 200 bytes", memories(100_000, 200), func(b []byte) error {
			next := memoryStream(jsonRequest(b).Body) // as the import route reads a SQLite workspace's
			for {
				if _, err := next(); err != nil {
					if err == io.EOF {
						return nil
					}
					return err
				}
			}
		}, 4},
	} {
		var err error
		n := allocated(func() { err = c.decode(c.body) })
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		ratio := float64(n) / float64(len(c.body))
		t.Logf("%s: body %d bytes, decoding allocated %.2f times that", c.name, len(c.body), ratio)
		if ratio > c.limit {
			t.Errorf("%s: decoding allocated %.1f times the body, over %g", c.name, ratio, c.limit)
		}
	}
}

func decodeMessages(body []byte) error {
	var q MessagesRequest
	if err := decodeMessagesRequest(jsonRequest(body), &q); err != nil {
		return err
	}
	_, err := DecodeHistory(q.History, "history")
	return err
}
