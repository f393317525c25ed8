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
// below 0x80, so it scans bytes.
func HasControls(s string) bool {
	// Eight bytes at a time: a word with no byte below 0x20 and none equal
	// to 0x7f holds nothing to strip. Tab and newline are below 0x20, so a
	// word with one is looked at byte by byte; text has about one in ten.
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		d := x ^ 0x7f7f7f7f7f7f7f7f
		if (x-0x2020202020202020)&^x&0x8080808080808080 == 0 && (d-0x0101010101010101)&^d&0x8080808080808080 == 0 {
			continue
		}
		for _, c := range []byte(s[i : i+8]) {
			if stripped(c) {
				return true
			}
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
