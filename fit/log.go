package fit

import "strings"

// MaxLogEntries bounds the entries LogEntries returns: the note holds a
// few hundred tokens of them at most, so older ones are never needed.
const MaxLogEntries = 16

// LogEntries splits the text of a conversation log (memory/HISTORY.md)
// into its entries, oldest first, and returns the last MaxLogEntries. An
// entry begins with a "[YYYY-MM-DD" line at the start of the file or
// after a blank line, as consolidation writes it; anything before the
// first such line is an entry of its own.
func LogEntries(text string) []string {
	var entries []string
	start, blank := 0, true
	for i := 0; i < len(text); {
		end := strings.IndexByte(text[i:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += i
		}
		line := text[i:end]
		if blank && i > start && datedLine(line) {
			entries = appendEntry(entries, text[start:i])
			start = i
		}
		blank = strings.TrimSpace(line) == ""
		i = end + 1
	}
	entries = appendEntry(entries, text[start:])
	if len(entries) > MaxLogEntries {
		entries = entries[len(entries)-MaxLogEntries:]
	}
	return entries
}

func appendEntry(entries []string, s string) []string {
	if s = strings.TrimSpace(s); s != "" {
		entries = append(entries, s)
	}
	return entries
}

// datedLine reports whether a line opens with "[YYYY-MM-DD".
func datedLine(line string) bool {
	if len(line) < 11 || line[0] != '[' || line[5] != '-' || line[8] != '-' {
		return false
	}
	for _, i := range []int{1, 2, 3, 4, 6, 7, 9, 10} {
		if line[i] < '0' || line[i] > '9' {
			return false
		}
	}
	return true
}
