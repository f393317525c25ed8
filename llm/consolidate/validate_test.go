package consolidate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/loomctx/loom/llm/llmtest"
)

// A reply that is not a sane memory file is never written: the old
// MEMORY.md stays and the chunk goes to HISTORY.md raw with the reason.
func TestModelOutputIsValidatedBeforeWriting(t *testing.T) {
	for _, tc := range []struct {
		name, entry, mem, reason string
	}{
		{"oversize memory", "[2026-03-01 10:15] E.", strings.Repeat("x", 300<<10), "memory_update is 307200 bytes, over the cap"},
		{"NUL in memory", "[2026-03-01 10:15] E.", "# M\x00\n", "control character U+0000"},
		{"bell in memory", "[2026-03-01 10:15] E.", "# M \a\n", "control character U+0007"},
		{"escape in entry", "[2026-03-01 10:15] \x1b[2J", "# M\n", "history_entry holds control character U+001B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.OpenAI)
			s.Push(save(tc.entry, tc.mem))
			const old = "# Memory\n- User name: Ana\n"
			files, dir := workspaceFiles(t, old)
			c := newConsolidator(t, s, files, 0)
			msgs := history(6)
			last, outs, err := c.Maybe(context.Background(), msgs, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 1 || !outs[0].Archived || !strings.Contains(outs[0].Refused, tc.reason) || last != outs[0].To {
				t.Fatalf("last %d outcomes %+v", last, outs)
			}
			if got := read(t, dir, "MEMORY.md"); got != old {
				t.Errorf("MEMORY.md changed to %q", got)
			}
			hist := read(t, dir, "HISTORY.md")
			if !strings.Contains(hist, "[RAW]") || !strings.Contains(hist, tc.reason) || !strings.Contains(hist, "Question number 0") {
				t.Errorf("HISTORY.md = %q", hist)
			}
			if strings.ContainsAny(hist, "\x00\x1b") {
				t.Errorf("model bytes reached HISTORY.md: %q", hist)
			}
		})
	}
}
