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

// historyBody is a messages request with a history of n user messages of
// size bytes of text each.
func historyBody(n, size int) []byte {
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

// Decoding a JSON route's request allocates at most 4 times its body (an
// upper bound on what it holds at once), the body read included: the
// message list's history (to maxHistory messages, long or short; the
// shortest within tinyHistoryLimit), one long string in a turn, a message
// list, a token count or a memory, and a memory import, which streams
// (its memories long, one byte or written {}).
func TestDecodePeakMemory(t *testing.T) {
	history := historyBody
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
		limit  float64
		decode func(body []byte) error
	}{
		{"messages, 10,000 of 300 bytes", history(maxHistory, 300), 4, decodeMessages},
		{"messages, 10,000 of 1 byte", history(maxHistory, 1), tinyHistoryLimit, decodeMessages},
		{"messages, 5,000 of 4 KiB", history(5000, 4<<10), 4, decodeMessages},
		{"messages, one 16 MiB message", []byte(`{"message":"` + long + `"}`), 4, decodeMessages},
		{"turn, 16 MiB message", []byte(`{"message":"` + long + `"}`), 4, func(b []byte) error { var q TurnRequest; return DecodeJSON(jsonRequest(b), &q) }},
		{"tokens, 16 MiB text", []byte(`{"text":"` + long + `"}`), 4, func(b []byte) error { var q TokensRequest; return DecodeJSON(jsonRequest(b), &q) }},
		{"memory, 16 MiB content", []byte(`{"category":"global_rule","content":"` + long + `"}`), 4, func(b []byte) error { var q AddMemoryRequest; return DecodeJSON(jsonRequest(b), &q) }},
		{"import, 100,000 memories of 1 byte", memories(100_000, 1), 4, importMemories},
		{"import, 100,000 empty memories", emptyMemories(100_000), 4, importMemories},
		{"import, 100,000 memories of 200 bytes", memories(100_000, 200), 4, importMemories},
	} {
		var err error
		alloctest.Bound(t, c.name, len(c.body), c.limit, func() { err = c.decode(c.body) })
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// tinyHistoryLimit is for a history of the most messages a request may
// hold, each of one character: a 300 KB body, 30 bytes a message. The
// body, read whole, is 1 times itself, and the decoded list, all that
// decoding keeps (each message decoded straight into it), 3.73 times: a
// messages.Message is 112 bytes. 4 times would need a message of at most
// about 88 bytes, or a body not held whole while it is decoded. Measured
// 4.80 times the body; was 6.48 with a list of the raw messages first.
const tinyHistoryLimit = 5

// A history longer than maxHistory is refused before its messages are
// decoded, and costs little more than its body: a million tiny ones.
func TestDecodeLongHistoryRefused(t *testing.T) {
	body := historyBody(1_000_000, 1)
	var err error
	alloctest.Bound(t, "messages, a million tiny messages", len(body), 4, func() { err = decodeMessages(body) })
	if p, ok := err.(*Problem); !ok || p.Field != "history" || p.Detail != fmt.Sprintf("more than %d messages", maxHistory) {
		t.Errorf("err = %#v", err)
	}
}

// importMemories reads body as the import route does for a store that
// streams.
func importMemories(body []byte) error {
	next := memoryStream(jsonRequest(body).Body)
	for {
		if _, err := next(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// emptyMemories is an import of n memories written {}.
func emptyMemories(n int) []byte {
	return []byte(`{"memories":[` + strings.Repeat(`{},`, n-1) + `{}]}`)
}

func decodeMessages(body []byte) error {
	var q MessagesRequest
	if err := decodeMessagesRequest(jsonRequest(body), &q); err != nil {
		return err
	}
	_, err := q.decodeHistory()
	return err
}

// toolsBody is a render request naming n tools of size bytes each.
func toolsBody(n, size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		name := fmt.Sprintf("t%d", i)
		name += strings.Repeat("x", max(0, size-len(name)))
		b.WriteString(`"` + name + `"`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// The render and messages routes' tools list: past MaxTools it is refused
// before it is decoded (3 million short names took 13 times the body), and
// the most a request may name decode within 4 times the body; short names
// within smallToolsLimit.
func TestDecodeToolsPeakMemory(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"render":   func(b []byte) error { var q RenderRequest; return decodeRenderRequest(jsonRequest(b), &q) },
		"messages": decodeMessages,
	}
	for _, route := range []string{"render", "messages"} {
		for _, c := range []struct {
			name    string
			n, size int
			limit   float64
			ok      bool
		}{
			{"3 million short tools", 3_000_000, 1, 4, false},
			{"the most tools, 4 KiB names", MaxTools, 4 << 10, 4, true},
			{"the most tools, short names", MaxTools, 1, smallToolsLimit, true},
		} {
			body := toolsBody(c.n, c.size)
			name := route + ", " + c.name
			var err error
			alloctest.Bound(t, name, len(body), c.limit, func() { err = decoders[route](body) })
			if (err == nil) != c.ok {
				t.Errorf("%s: err = %v", name, err)
			}
		}
	}
}

// smallToolsLimit is for a list of the most short names a request may
// hold: a 7 KB body, of which a 16-byte string header per name (twice the
// name's JSON), encoding/json growing the list by doubling and the render
// route keeping a copy of the request for the next identical body take
// about 10 times (70 KB).
const smallToolsLimit = 12
