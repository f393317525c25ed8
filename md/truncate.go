package md

import (
	"strconv"
	"strings"
)

// cutInfo says what a truncation removed.
type cutInfo struct {
	Lines     int // lines removed
	Tokens    int // tokens removed, before the marker was added
	KeptLines int
}

// cutLines shortens text to at most limit tokens. It cuts only between lines,
// never inside a fenced code block, so no UTF-8 sequence is ever split, and it
// ends the text with a marker line saying what was cut from source. When not
// even the marker fits, the marker alone is returned.
func cutLines(text string, limit int, c Counter, source string) (string, cutInfo) {
	total := c.Count(text)
	lines := strings.SplitAfter(text, "\n")
	// Candidate cut points: after line i, where no fence is open.
	safe := make([]int, 0, len(lines)) // byte offsets
	costs := make([]int, 0, len(lines))
	inFence, fence := false, ""
	offset, running := 0, 0
	for _, ln := range lines {
		trimmed := strings.TrimLeft(ln, " ")
		if f := fenceOf(trimmed); f != "" {
			switch {
			case !inFence:
				inFence, fence = true, f
			case strings.HasPrefix(trimmed, fence) && strings.TrimSpace(trimmed[len(fence):]) == "":
				inFence = false
			}
		}
		offset += len(ln)
		running += c.Count(ln)
		if !inFence {
			safe = append(safe, offset)
			costs = append(costs, running)
		}
	}
	marker := func(keptBytes int) string {
		return "[… " + strconv.Itoa(countLines(text[keptBytes:])) + " more lines (" +
			strconv.Itoa(total-c.Count(text[:keptBytes])) + " tokens) cut from " + source + "]"
	}
	// Walk back from the longest prefix whose summed line costs fit, and
	// confirm with an exact count, which can differ at the joins.
	i := len(safe) - 1
	for i >= 0 && costs[i] > limit {
		i--
	}
	for ; i >= 0; i-- {
		keep := text[:safe[i]]
		out := keep
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += marker(safe[i])
		if c.Count(out) <= limit {
			return out, cutInfo{Lines: countLines(text[safe[i]:]), Tokens: total - c.Count(keep), KeptLines: countLines(keep)}
		}
	}
	return marker(0), cutInfo{Lines: countLines(text), Tokens: total}
}

// fenceOf returns the fence a line opens or closes (``` or ~~~, at least
// three), or "".
func fenceOf(line string) string {
	if len(line) < 3 || (line[0] != '`' && line[0] != '~') {
		return ""
	}
	ch := line[0]
	n := 0
	for n < len(line) && line[n] == ch {
		n++
	}
	if n < 3 {
		return ""
	}
	return line[:n]
}

// countLines counts lines, including a last one without a newline.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
