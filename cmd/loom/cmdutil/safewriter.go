package cmdutil

import (
	"io"

	"github.com/loomctx/loom/workspace"
)

// controlStripper writes to w with the C0 control characters other than
// tab and newline (and DEL) removed, so nothing loom prints, a model's
// reply, a memory or a file name included, can send an escape sequence to
// the terminal or rewrite a line with a carriage return. JSON output is
// unaffected: encoders escape those characters.
type controlStripper struct{ w io.Writer }

// StripControls wraps w so that what is written to it loses its C0
// control characters other than tab and newline.
func StripControls(w io.Writer) io.Writer {
	if _, ok := w.(controlStripper); ok {
		return w
	}
	return controlStripper{w}
}

func (c controlStripper) Write(p []byte) (int, error) {
	clean := true
	for _, b := range p {
		if (b < 0x20 && b != '\t' && b != '\n') || b == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return c.w.Write(p)
	}
	if _, err := io.WriteString(c.w, workspace.StripControls(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
