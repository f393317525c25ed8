package cmdutil

import (
	"bytes"
	"strings"
	"testing"

	"github.com/loomctx/loom/workspace"
)

// Class: control characters. A file name with a newline or ESC cannot forge
// a "loom: warning:" line or reach the terminal, and nothing written to the
// process's streams carries C0 controls other than tab and newline.
func TestDiagnosticsCannotForgeLines(t *testing.T) {
	var b bytes.Buffer
	PrintDiagnostics(&b, []workspace.Diagnostic{{
		Path:     "skills/x\nloom: error: forged/SKILL.md",
		Line:     3,
		Severity: workspace.Warning,
		Code:     "skills.frontmatter",
		Message:  "bad \x1b]0;title\x07 value\nloom: error: also forged",
	}})
	out := b.String()
	if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "loom: warning: ") {
		t.Errorf("one diagnostic printed as %d lines: %q", strings.Count(out, "\n"), out)
	}
	if strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, 0x07) {
		t.Errorf("escape reached the output: %q", out)
	}
	if !strings.Contains(out, `"skills/x\nloom: error: forged/SKILL.md":3:`) {
		t.Errorf("path not quoted: %q", out)
	}
}

func TestStreamsStripControls(t *testing.T) {
	var b bytes.Buffer
	w := StripControls(&b)
	n, err := w.Write([]byte("ok\ttab\nline\x1b[2J\rover\x00\x7f end\n"))
	if err != nil || n != 27 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := b.String(); got != "ok\ttab\nline[2Jover end\n" {
		t.Errorf("got %q", got)
	}
	if StripControls(w) != w {
		t.Error("wrapped twice")
	}
}
