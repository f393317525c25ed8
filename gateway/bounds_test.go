package gateway

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomctx/loom/gateway/protocol"
	"github.com/loomctx/loom/internal/alloctest"
)

// messagesBody is a request of n user and assistant messages of size bytes
// of text each, in a "messages" (Chat Completions, Anthropic Messages) or
// "input" (Responses) list, after head's members.
func messagesBody(head, list string, n, size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{` + head + `,"` + list + `":[`)
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

// chatBody is a Chat Completions request of n messages of size bytes.
func chatBody(n, size int) []byte {
	return messagesBody(`"model":"m","stream":true`, "messages", n, size)
}

// Decoding a gateway request allocates at most 4 times its body, on each
// wire, for a body of a million tiny messages (refused past
// maxRequestMessages before they are decoded; Chat Completions took 36
// times the body) as for long histories and one long message. The
// closest is a body of the most tiny messages a request may hold: a
// decoded message (messages.Message, 112 bytes) is 3.5 times the JSON of
// one of one character, and the list of them is all decoding keeps, each
// message decoded straight into it, its known role a constant. Measured
// on each wire: 3.46 times the body; was 5.95 (Chat Completions,
// Responses) and 7.18 (Messages) with a 160-byte message, lists of the
// raw elements and (Messages) of their roles and contents, and earlier
// 18, 26.5 and 23.3.
func TestDecodePeakMemory(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	wires := []struct {
		name   string
		body   func(n, size int) []byte
		decode func(body []byte) error
	}{
		{"chat completions", chatBody, func(body []byte) error { _, err := decode(r, body); return err }},
		{"responses", func(n, size int) []byte { return messagesBody(`"model":"m","stream":true`, "input", n, size) },
			func(body []byte) error { _, err := protocol.DecodeResponses(body, nil); return err }},
		{"messages", func(n, size int) []byte {
			return messagesBody(`"model":"m","stream":true,"max_tokens":100`, "messages", n, size)
		},
			func(body []byte) error { _, _, err := anthropicTurn(r, body, false); return err }},
	}
	for _, w := range wires {
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
			body := w.body(c.n, c.size)
			name := w.name + ", " + c.name
			var err error
			alloctest.Bound(t, name, len(body), 4, func() { err = w.decode(body) })
			if (err == nil) != c.ok {
				t.Errorf("%s: err = %v", name, err)
			}
		}
	}
}

// blocksBody is a request of one message of n content blocks (Messages)
// or parts (Responses) of size bytes of text each.
func blocksBody(wire string, n, size int) []byte {
	var b bytes.Buffer
	head, list, part := `"model":"m","max_tokens":100`, "messages", "text"
	if wire == "responses" {
		head, list, part = `"model":"m"`, "input", "input_text"
	}
	b.WriteString(`{` + head + `,"` + list + `":[{"role":"user","content":[`)
	text := strings.Repeat("x", size)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"` + part + `","text":"` + text + `"}`)
	}
	b.WriteString(`]}]}`)
	return b.Bytes()
}

// The same bound for content blocks and parts: a list of a million tiny
// ones is refused past protocol.MaxBlocks before it is decoded (it took
// 38 times the body), and the most a request may hold decode within 4
// times the body. Tiny ones, plain text, become their messages.Parts
// without a decoded block or part each: measured 1.22 (Responses; was
// 4.38 with a decoded part each, and earlier 11) and 1.49 (Messages; was
// 8.8) times the body.
func TestDecodeBlocksPeakMemory(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/messages", nil)
	decoders := map[string]func([]byte) error{
		"responses": func(body []byte) error { _, err := protocol.DecodeResponses(body, nil); return err },
		"messages":  func(body []byte) error { _, _, err := anthropicTurn(r, body, false); return err },
	}
	for _, wire := range []string{"responses", "messages"} {
		for _, c := range []struct {
			name    string
			n, size int
			ok      bool
		}{
			{"a million tiny blocks", 1_000_000, 1, false},
			{"the most blocks, tiny", protocol.MaxBlocks, 1, true},
			{"the most blocks, 100 bytes", protocol.MaxBlocks, 100, true},
			{"the most blocks, 1 KiB", protocol.MaxBlocks, 1 << 10, true},
		} {
			body := blocksBody(wire, c.n, c.size)
			name := wire + ", " + c.name
			var err error
			alloctest.Bound(t, name, len(body), 4, func() { err = decoders[wire](body) })
			if (err == nil) != c.ok {
				t.Errorf("%s: err = %v", name, err)
			}
		}
	}
}

// toolsBody is a request of one message and n tools, each with a
// description of desc bytes and a schema of props string parameters, in
// the wire's own tool shape.
func toolsBody(wire string, n, desc, props int) []byte {
	var b bytes.Buffer
	head, list := `"model":"m","stream":true`, "messages"
	switch wire {
	case "responses":
		list = "input"
	case "messages":
		head += `,"max_tokens":100`
	}
	b.WriteString(`{` + head + `,"` + list + `":[{"role":"user","content":"hi"}],"tools":[`)
	var schema bytes.Buffer
	schema.WriteString(`{"type":"object","properties":{`)
	for j := range props {
		if j > 0 {
			schema.WriteByte(',')
		}
		fmt.Fprintf(&schema, `"p%d":{"type":"string","description":"a parameter"}`, j)
	}
	schema.WriteString(`}}`)
	d := strings.Repeat("d", desc)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		switch wire {
		case "chat":
			fmt.Fprintf(&b, `{"type":"function","function":{"name":"t%d","description":"%s","parameters":%s}}`, i, d, schema.Bytes())
		case "responses":
			fmt.Fprintf(&b, `{"type":"function","name":"t%d","description":"%s","parameters":%s}`, i, d, schema.Bytes())
		default:
			fmt.Fprintf(&b, `{"name":"t%d","description":"%s","input_schema":%s}`, i, d, schema.Bytes())
		}
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// toolsLimit bounds decoding a request's tools, as a multiple of the
// body: the 4. Schemas stay JSON text from end to end
// (llm.Tool.Parameters) and are counted part by part. Measured
// (Responses, Messages): 1,000 small tools 1.72 and 1.74 times the body
// (15.7 and 16.4 when schemas became maps and the route encoded the tools
// again to count them), one schema of 100,000 parameters 1.0 and 1.0 (was
// 17.5), one tool of a 16 MiB description 1.0 (was 4.0). Chat Completions
// keeps its tools as they came (1.0). A list longer than
// protocol.MaxItems is refused unread (200,000 tools took 8 to 10 times
// the body).
const toolsLimit = 4

// Decoding a request's tools: too many are refused before decoding, and
// the rest decode within toolsLimit times the body.
func TestDecodeToolsPeakMemory(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	decoders := map[string]func([]byte) error{
		"chat": func(body []byte) error { _, err := decode(r, body); return err },
		"responses": func(body []byte) error { // and what the route keeps of its tools, as anthropicTurn does
			t, err := protocol.DecodeResponses(body, nil)
			if err == nil {
				new(turnRequest).limits(t)
			}
			return err
		},
		"messages": func(body []byte) error { _, _, err := anthropicTurn(r, body, false); return err },
	}
	for _, wire := range []string{"chat", "responses", "messages"} {
		for _, c := range []struct {
			name              string
			n, desc, props    int
			limit             float64
			refusedUnlessChat bool
		}{
			{"more than the most tools", protocol.MaxItems + 1, 1, 0, 4, true},
			{"1,000 small tools", 1000, 10, 5, toolsLimit, false},
			{"one tool, 16 MiB description", 1, 16 << 20, 0, toolsLimit, false},
			{"one tool, 100,000 parameters", 1, 10, 100_000, toolsLimit, false},
		} {
			body := toolsBody(wire, c.n, c.desc, c.props)
			name := wire + ", " + c.name
			var err error
			alloctest.Bound(t, name, len(body), c.limit, func() { err = decoders[wire](body) })
			if refused := c.refusedUnlessChat && wire != "chat"; (err != nil) != refused {
				t.Errorf("%s: err = %v", name, err)
			}
		}
	}
}
