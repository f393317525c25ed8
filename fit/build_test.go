package fit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/internal/fittest"
	"github.com/loomctx/loom/messages"
)

func TestBuildReportsTheFittedPrefix(t *testing.T) {
	c := counter(t)
	hist := fittest.Conversation(80, 300)
	for _, merged := range []bool{false, true} {
		h := hist
		if merged { // the history ends with a user message: Build merges the current one into it
			h = append(h[:len(h):len(h)], messages.Message{Role: messages.RoleUser, Content: messages.TextContent("and one more thing")})
		}
		turn := messages.Turn{System: "You are terse.", History: h, Message: "go on",
			Runtime: messages.Runtime{Now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Location: time.UTC}}
		bopts := messages.Options{Counter: c}
		res, rep, err := fit.Build(turn, bopts, fit.Options{Window: 8000, Reserve: 500, Counter: c})
		if err != nil {
			t.Fatal(err)
		}
		if rep == nil || rep.Dropped == 0 {
			t.Fatalf("merged %v: nothing dropped: %+v", merged, rep)
		}
		// The list is what Fit makes of the plain build.
		plain, err := messages.Build(turn, bopts)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fit.Fit(plain.Messages, fit.Options{Window: 8000, Reserve: 500, Counter: c})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(res.Messages)
		b, _ := json.Marshal(f.Messages)
		if string(a) != string(b) {
			t.Errorf("merged %v: Build's list differs from Fit's", merged)
		}
		// The report's prefix is the fitted one: system, note and the kept
		// history, all but the current message.
		if want := len(res.Messages) - 2; res.Report.Prefix.Messages != want {
			t.Errorf("merged %v: prefix of %d messages, want %d", merged, res.Report.Prefix.Messages, want)
		}
		if got := wireTokens(t, c, res.Messages); got > 7500 || got != rep.Tokens {
			t.Errorf("merged %v: %d tokens, report %d", merged, got, rep.Tokens)
		}
	}
	// No window: no fitting, no report.
	res, rep, err := fit.Build(messages.Turn{System: "s", History: hist, Message: "x"}, messages.Options{}, fit.Options{})
	if err != nil || rep != nil || len(res.Messages) != len(hist)+2 {
		t.Errorf("without a window: %v %v %d", err, rep, len(res.Messages))
	}
}
