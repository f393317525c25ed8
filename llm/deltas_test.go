package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
)

// A stream's text is passed on before the client waits for more: an
// upstream that sends one delta and then waits until the caller has seen
// it gets the next one out. Deltas that arrive together come in one call.
func TestStreamDeltasNotHeldBack(t *testing.T) {
	openai := func(text string) string {
		return fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"content":%q}}]}`+"\n\n", text)
	}
	anthropic := func(text string) string {
		return fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", text)
	}
	for _, c := range []struct {
		provider   string
		start, end string
		delta      func(string) string
	}{
		{"openai", "", `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n", openai},
		{"anthropic", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", anthropic},
	} {
		t.Run(c.provider, func(t *testing.T) {
			seen := make(chan string, 10)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				flush := func(s string) { fmt.Fprint(w, s); w.(http.Flusher).Flush() }
				flush(c.start + c.delta("one"))
				select { // the caller must have "one" before "two" is sent
				case <-seen:
				case <-time.After(10 * time.Second):
					t.Error("the first delta was held back until the next arrived")
				}
				flush(c.delta("two") + c.delta(" three") + c.end)
			}))
			defer up.Close()
			cl, err := llm.New(llm.Config{Provider: c.provider, BaseURL: up.URL + "/v1", APIKey: "k", Model: "m", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			res, err := cl.Stream(context.Background(), llm.Request{Messages: []messages.Message{{Role: messages.RoleUser, Content: messages.TextContent("hi")}}},
				func(d string) { got = append(got, d); seen <- d })
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"one", "two three"}; !reflect.DeepEqual(got, want) || res.Content != "onetwo three" {
				t.Errorf("deltas %q, content %q; want %q", got, res.Content, want)
			}
		})
	}
}
