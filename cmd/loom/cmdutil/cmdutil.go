// Package cmdutil holds what loom's commands share: the streams they write to
// and the error types that decide exit codes.
package cmdutil

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/loomctx/loom/workspace"
)

// IOStreams are where a command reads and writes: data goes to Out, messages
// to ErrOut, so `loom render > prompt.md` stays clean.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// IsTTY reports whether Out is a terminal.
	IsTTY bool
}

// System returns the process's own streams. What loom writes to stdout
// and stderr loses its C0 control characters other than tab and newline
// ([StripControls]).
func System() *IOStreams {
	tty := false
	if st, err := os.Stdout.Stat(); err == nil {
		tty = st.Mode()&os.ModeCharDevice != 0
	}
	return &IOStreams{In: os.Stdin, Out: StripControls(os.Stdout), ErrOut: StripControls(os.Stderr), IsTTY: tty}
}

// Test returns streams backed by buffers, for command tests.
func Test() (ios *IOStreams, in *bytes.Buffer, out *bytes.Buffer, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// FlagError is a usage error: a bad flag or argument. It exits with 2.
type FlagError struct{ msg string }

func (e *FlagError) Error() string { return e.msg }

// FlagErrorf returns a usage error.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{msg: fmt.Sprintf(format, args...)}
}

// SilentError exits with Code without printing anything more; the command has
// already said what went wrong.
type SilentError struct{ Code int }

func (e *SilentError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// PrintDiagnostics writes each diagnostic to w as
// "loom: warning: <file>: <message>", the form the CLI promises on stderr.
func PrintDiagnostics(w io.Writer, diags []workspace.Diagnostic) {
	for _, d := range diags {
		var b strings.Builder
		b.WriteString("loom: ")
		b.WriteString(d.Severity.String())
		b.WriteString(": ")
		if d.Path != "" {
			b.WriteString(workspace.QuotePath(d.Path))
			if d.Line > 0 {
				fmt.Fprintf(&b, ":%d", d.Line)
			}
			b.WriteString(": ")
		}
		b.WriteString(workspace.OneLine(d.Message))
		fmt.Fprintln(w, b.String())
	}
}
