package llm_test

import (
	"context"
	"testing"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
)

// BenchmarkStreamRoundTrip is one streamed turn against the local fake:
// the client's own overhead plus loopback HTTP, no model time.
func BenchmarkStreamRoundTrip(b *testing.B) {
	for _, format := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		b.Run(format, func(b *testing.B) {
			s := llmtest.New(b, format)
			s.Default = func(llmtest.Request) llmtest.Reply {
				return llmtest.Reply{Text: "A reply of a dozen words or so, streamed one word at a time.", NoUsage: true}
			}
			c, _ := llm.New(s.Config(), llmtest.Options(nil)...)
			req := llm.Request{System: "be brief", Messages: []messages.Message{{Role: "user", Content: messages.TextContent("hi")}}}
			for b.Loop() {
				if _, err := c.Stream(context.Background(), req, func(string) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
