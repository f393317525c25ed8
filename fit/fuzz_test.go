package fit_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/internal/fittest"
	"github.com/loomctx/loom/messages"
)

// FuzzFit builds a message list from the fuzzer's bytes (roles, sizes,
// tool rounds, a window) and checks what Fit promises: no panic, the input
// untouched, the result within the budget unless the report says how far
// over, whole units, and Report.Tokens equal to the list's count.
func FuzzFit(f *testing.F) {
	f.Add([]byte{3, 1, 2, 9, 4, 0, 7, 1, 2, 200}, uint16(800), uint16(100))
	f.Add([]byte{0, 0, 0, 0}, uint16(50), uint16(10))
	f.Add([]byte{5, 5, 5, 250, 1, 1, 1}, uint16(3000), uint16(2999))
	c := counter(f)
	f.Fuzz(func(t *testing.T, plan []byte, window, reserve uint16) {
		if len(plan) > 200 {
			plan = plan[:200]
		}
		msgs := []messages.Message{system(fittest.Filler(1, int(window%97)))}
		for i, b := range plan {
			words := int(b)
			switch b % 4 {
			case 0, 1:
				msgs = append(msgs, user(fmt.Sprintf("u%d %s", i, fittest.Filler(i, words))))
			case 2:
				id := fmt.Sprintf("call_%d", i)
				msgs = append(msgs,
					messages.Message{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{messages.NewToolCall(id, "f", `{}`)}},
					messages.Message{Role: messages.RoleTool, Content: messages.TextContent(fittest.Filler(i, words))}.WithToolCallID(id))
			case 3:
				msgs = append(msgs, messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(fittest.Filler(i, words))})
			}
		}
		before := fmt.Sprint(msgs)
		res, err := fit.Fit(msgs, fit.Options{Window: int(window), Reserve: int(reserve), Counter: c})
		if fmt.Sprint(msgs) != before {
			t.Fatal("Fit changed its input")
		}
		if err != nil {
			r := int(reserve)
			if r == 0 {
				r = fit.DefaultReserve
			}
			if window != 0 && r < int(window) {
				t.Fatalf("window %d reserve %d: %v", window, reserve, err)
			}
			return
		}
		rep := res.Report
		if got := fit.Tokens(c, res.Messages, 0); got != rep.Tokens {
			t.Fatalf("Report.Tokens %d, the list counts %d", rep.Tokens, got)
		}
		if window > 0 && rep.Tokens-rep.Over > rep.Budget {
			t.Fatalf("%d tokens, %d over, budget %d", rep.Tokens, rep.Over, rep.Budget)
		}
		if rep.Dropped > 0 {
			kept := res.Messages[1:]
			if rep.Note {
				if !strings.HasPrefix(kept[0].Content.Text, "[loom: ") {
					t.Fatalf("no note: %q", kept[0].Content.Text)
				}
				kept = kept[1:]
			}
			if len(kept) > 0 && kept[0].Role != messages.RoleUser {
				t.Fatalf("the kept list starts with %s", kept[0].Role)
			}
		}
		checkPairs(t, res.Messages)
	})
}
