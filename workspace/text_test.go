package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/workspace"
)

// Class: control characters. A file name with a newline or ESC cannot
// forge a diagnostic line or reach the terminal, and C0 controls other than
// tab and newline never reach the prompt.
func TestControlCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"skills/a/SKILL.md":   "skills/a/SKILL.md",
		"a\nloom: warning: x": `"a\nloom: warning: x"`,
		"e\x1b[31mred":        `"e\x1b[31mred"`,
		"tab\there":           `"tab\there"`,
		"q\"uote":             `"q\"uote"`,
		"bad\xffutf8":         `"bad\xffutf8"`,
		"ünïcode.md":          "ünïcode.md",
		"c1\u009b2J":          `"c1\u009b2J"`,
	} {
		if got := workspace.QuotePath(in); got != want {
			t.Errorf("QuotePath(%q) = %s, want %s", in, got, want)
		}
	}
	if got := workspace.StripControls("a\x1b[2Jb\tc\nd\re\x07f\x00g\x7fh"); got != "a[2Jb\tc\ndefgh" {
		t.Errorf("StripControls = %q", got)
	}
	if got := workspace.OneLine("x\ny\x1bz"); got != `x\ny\x1bz` {
		t.Errorf("OneLine = %q", got)
	}

	d := workspace.Diagnostic{Path: "evil\nloom: error: forged", Severity: workspace.Warning, Code: "read.error", Message: "bad\nloom: error: forged too \x1b[31m"}
	s := d.String()
	if strings.Count(s, "\n") != 0 || strings.ContainsRune(s, 0x1b) {
		t.Errorf("diagnostic spans lines or carries ESC: %q", s)
	}

	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("Be \x1b[31mred\x1b[0m.\aOK\r\n\tindented\n"), 0o644)
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ws.Load("AGENTS.md")
	if err != nil {
		t.Fatal(err)
	}
	if f.Text != "Be [31mred[0m.OK\n\tindented\n" {
		t.Errorf("prompt text = %q", f.Text)
	}
	if len(f.Repairs) != 1 || !strings.Contains(f.Repairs[0], "control") {
		t.Errorf("repairs = %q", f.Repairs)
	}
}

// A workspace folder named with a newline cannot forge an error line.
func TestOpenErrorQuotesName(t *testing.T) {
	_, err := workspace.Open(filepath.Join(t.TempDir(), "no\nloom: error: forged"))
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %q", err)
	}
}

// HasControls reads eight bytes at a time; it must say exactly what
// StripControls would do: every byte value, at every place in and around a
// word, amid plain text, tabs, newlines and multi-byte characters.
func TestHasControlsEveryByteEverywhere(t *testing.T) {
	for _, fill := range []string{"a", "\t", "\n", "é", "\u2028", "\x80"} {
		base := []byte(strings.Repeat(fill, 24))[:24]
		for at := range 19 {
			for c := range 256 {
				b := append([]byte(nil), base...)
				b[at] = byte(c)
				s := string(b)
				want := workspace.StripControls(s) != s
				if got := workspace.HasControls(s); got != want {
					t.Fatalf("HasControls(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}
