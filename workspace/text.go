package workspace

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"
)

// QuotePath returns p as it may be shown in a diagnostic: unchanged when it
// is plain printable text, else Go-quoted ("a\nb", "\x1b[31m"), so that a
// file name can neither forge a line of output nor reach the terminal as an
// escape sequence.
func QuotePath(p string) string {
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size <= 1 || isControl(r) || r == '"' {
			return strconv.Quote(p)
		}
		i += size
	}
	return p
}

// StripControls removes the C0 control characters other than tab and
// newline (and DEL) from s: what loom writes to a terminal, and what it puts
// in a prompt. ESC, a lone CR, BEL and the like go; everything else stays.
func StripControls(s string) string {
	i := strings.IndexFunc(s, isStripped)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if !isStripped(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// HasControls reports whether StripControls would change s. Every character
// it looks for is one byte, and no byte of a multi-byte UTF-8 sequence is
// below 0x80, so it scans bytes (a cold load reads every file through it).
func HasControls(s string) bool {
	// Eight bytes at a time, with a flag (the top bit) per byte, exact for
	// each byte, so that no borrow runs from one byte into the next: below
	// 0x20, and neither tab nor newline; or DEL.
	const hi, lo = 0x8080808080808080, 0x0101010101010101
	eq := func(x, c uint64) uint64 { y := x ^ c*lo; return ^((y | hi) - lo) &^ y & hi }
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		below := ^((x | hi) - 0x20*lo) &^ x & hi
		if below&^eq(x, '\t')&^eq(x, '\n')|eq(x, 0x7f) != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if stripped(s[i]) {
			return true
		}
	}
	return false
}

// stripped reports whether StripControls removes the byte c.
func stripped(c byte) bool { return c < 0x20 && c != '\t' && c != '\n' || c == 0x7f }

func isStripped(r rune) bool { return (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f }

// isControl is any C0 or C1 control, DEL, and the Unicode line and
// paragraph separators, which some terminals take as new lines.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029'
}

// OneLine makes s safe as part of one line of terminal output, such as a
// diagnostic's message: every control character (newline and tab
// included) is written as a Go escape (\n, \x1b), so that the text can
// neither start a forged line nor send an escape sequence.
func OneLine(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unwrapPathErr drops an *fs.PathError's own path, which would repeat the
// name the caller already gives (unquoted).
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
