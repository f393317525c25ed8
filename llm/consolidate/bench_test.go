package consolidate_test

import (
	"testing"

	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/llmtest"
)

// BenchmarkPlan is the per-turn cost of deciding whether to consolidate a
// 200-message history (cl100k counts, uncached).
func BenchmarkPlan(b *testing.B) {
	c := consolidate.New(consolidate.Options{Counter: llmtest.Counter{}, Threshold: 4000, Keep: 2000})
	msgs := history(100)
	for b.Loop() {
		c.Plan(msgs, 0)
	}
}
