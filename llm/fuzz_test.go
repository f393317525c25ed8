package llm_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
)

// bodyTransport answers every request with one fixed body.
type bodyTransport struct {
	body        []byte
	contentType string
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {b.contentType}},
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: r}, nil
}

// Whatever an endpoint sends, a stream or a JSON reply ends without a
// panic, and never holds more text than the bound.
func FuzzReply(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"tool_use\",\"input\":null}}\n\n"))
	f.Add([]byte(`{"choices":[{"message":{"content":"x","tool_calls":[{"id":"1","function":{"name":"f","arguments":{"a":1}}}]}}]}`))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":9999999,\"function\":{\"arguments\":\"{\"}}]}}]}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, format := range []string{llmtest.OpenAI, llmtest.Anthropic} {
			for _, stream := range []bool{true, false} {
				hc := &http.Client{Transport: bodyTransport{body: body, contentType: "text/event-stream"}}
				c, err := llm.New(llm.Config{Provider: format, BaseURL: "http://fuzz.invalid/v1", Model: "m", MaxRetries: -1, MaxReplyBytes: 256},
					llm.WithHTTPClient(hc))
				if err != nil {
					t.Fatal(err)
				}
				var res llm.Response
				if stream {
					res, _ = c.Stream(context.Background(), hi, nil)
				} else {
					res, _ = c.Complete(context.Background(), hi)
				}
				if len(res.Content) > 256 {
					t.Fatalf("%s stream=%v: %d bytes of text past a 256-byte bound", format, stream, len(res.Content))
				}
			}
		}
	})
}
