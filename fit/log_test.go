package fit_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loomctx/loom/fit"
)

func TestLogEntries(t *testing.T) {
	text := "# History\n\n[2026-01-01 10:00] First entry.\n\n[2026-01-02 11:00] [RAW] 2 messages\nuser: hi\n\nassistant: [2026-01-02 is not an entry start, it follows text]\n[2026-01-02 a line after text is not one either]\n\n[2026-01-03 09:30] Third.\n"
	want := []string{
		"# History",
		"[2026-01-01 10:00] First entry.",
		"[2026-01-02 11:00] [RAW] 2 messages\nuser: hi\n\nassistant: [2026-01-02 is not an entry start, it follows text]\n[2026-01-02 a line after text is not one either]",
		"[2026-01-03 09:30] Third.",
	}
	if got := fit.LogEntries(text); !slices.Equal(got, want) {
		t.Errorf("LogEntries:\n%q\nwant\n%q", got, want)
	}
	if got := fit.LogEntries(""); len(got) != 0 {
		t.Errorf("empty log: %q", got)
	}
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "[2026-02-%02d 10:00] Entry %d.\n\n", i%28+1, i)
	}
	got := fit.LogEntries(b.String())
	if len(got) != fit.MaxLogEntries || got[len(got)-1] != "[2026-02-12 10:00] Entry 39." {
		t.Errorf("%d entries, last %q", len(got), got[len(got)-1])
	}
}
