package consolidate

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The caps on what the model may write. MEMORY.md enters every prompt, so a
// sane one is a few kilobytes; the caps only stop what is clearly not a
// memory file.
const (
	DefaultMaxMemoryBytes = 256 << 10
	DefaultMaxEntryBytes  = 64 << 10
)

// check says why a save_memory reply must not be written, "" when it may.
// Model output is untrusted input: it must be text (valid UTF-8, no NUL,
// no control characters but tab, newline and carriage return) and within
// the caps.
func (c *Consolidator) check(a saveArgs) string {
	if reason := checkText("memory_update", a.memory, c.opts.MaxMemoryBytes); reason != "" {
		return reason
	}
	return checkText("history_entry", a.entry, c.opts.MaxEntryBytes)
}

func checkText(field, s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf("%s is %d bytes, over the cap of %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return field + " is not valid UTF-8"
	}
	if i := strings.IndexFunc(s, isControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Sprintf("%s holds control character U+%04X at byte %d; it is not text", field, r, i)
	}
	return ""
}

func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	return r < 0x20 || r == 0x7f
}
