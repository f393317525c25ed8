package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/alloctest"
)

func jsonRequest(body []byte) *http.Request {
	r := httptest.NewRequest("POST", "http://127.0.0.1/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// Decoding a JSON route's request allocates at most 4 times its body (an
// upper bound on what it holds at once): the message list's history (to
// maxHistory messages, short or long), one long string in a turn, a
// message list, a token count or a memory, and a memory import, which
// streams.
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
	long := strings.Repeat("y", 16<<20)
	for _, c := range []struct {
		name   string
		body   []byte
		decode func(body []byte) error
	}{
		{"messages, 10,000 of 300 bytes", history(maxHistory, 300), decodeMessages},
		{"messages, 5,000 of 4 KiB", history(5000, 4<<10), decodeMessages},
		{"messages, one 16 MiB message", []byte(`{"message":"` + long + `"}`), decodeMessages},
		{"turn, 16 MiB message", []byte(`{"message":"` + long + `"}`), func(b []byte) error { var q TurnRequest; return DecodeJSON(jsonRequest(b), &q) }},
		{"tokens, 16 MiB text", []byte(`{"text":"` + long + `"}`), func(b []byte) error { var q TokensRequest; return DecodeJSON(jsonRequest(b), &q) }},
		{"memory, 16 MiB content", []byte(`{"category":"global_rule","content":"` + long + `"}`), func(b []byte) error { var q AddMemoryRequest; return DecodeJSON(jsonRequest(b), &q) }},
		{"import, 100,000 memories of 200 bytes", memories(100_000, 200), func(b []byte) error {
			next := memoryStream(jsonRequest(b).Body) // as the import route reads a body for a store that streams
			for {
				if _, err := next(); err != nil {
					if err == io.EOF {
						return nil
					}
					return err
				}
			}
		}},
	} {
		var err error
		alloctest.Bound(t, c.name, len(c.body), 4, func() { err = c.decode(c.body) })
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
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
