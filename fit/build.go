package fit

import "github.com/loomctx/loom/messages"

// Build builds a turn with messages.Build and fits it into the window
// fopts describe. When history went or the system prompt was rendered
// again, the turn is built once more on what was kept (the note first), so
// the build report's prefix, hashes and counts are those of the list sent;
// a current-turn message cut in its middle is carried over. The report is
// nil when fopts.Window is 0: no fitting was asked for.
func Build(t messages.Turn, bopts messages.Options, fopts Options) (*messages.Result, *Report, error) {
	res, err := messages.Build(t, bopts)
	if err != nil || fopts.Window == 0 {
		return res, nil, err
	}
	f, err := Fit(res.Messages, fopts)
	if err != nil {
		return nil, nil, err
	}
	if !f.Report.Changed() {
		return res, &f.Report, nil
	}
	if f.Report.SystemRoom > 0 {
		t.System, t.SystemSections = f.Messages[0].Content.Text, f.SystemSections
	}
	t.History = f.History(t.History)
	again, err := messages.Build(t, bopts)
	if err != nil {
		return nil, nil, err
	}
	// The current turn, from the last user message on, is the same length
	// in both lists; fit's copy may have a message cut.
	n := len(res.Messages) - currentStart(res.Messages)
	again.Messages = append(again.Messages[:len(again.Messages)-n], f.Messages[len(f.Messages)-n:]...)
	return again, &f.Report, nil
}

// currentStart is where Fit takes the current turn to start: the last
// user message after the system message.
func currentStart(msgs []messages.Message) int {
	sys := 0
	if len(msgs) > 0 && msgs[0].Role == messages.RoleSystem {
		sys = 1
	}
	for i := len(msgs) - 1; i >= sys; i-- {
		if msgs[i].Role == messages.RoleUser {
			return i
		}
	}
	return sys
}
