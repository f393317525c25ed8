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
//
// It keeps the longest prefix, ending at one of those cuts, whose summed line
// counts fit, or the next shorter one, until the exact count of the prefix
// and its marker fits. cutLinesReference in the tests is the same rule
// written plainly; they must agree on every text.
func cutLines(text string, limit int, c Counter, source string) (string, cutInfo) {
	total := c.Count(text)
	cuts, sums := lineCuts(text, limit, c)
	i := len(cuts) - 1
	for i >= 0 && sums[i] > limit {
		i--
	}
	for ; i >= 0; i-- {
		keep := text[:cuts[i]]
		kept := c.Count(keep)
		out := keep
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		mark := cutMarker(text[cuts[i]:], total-kept, source)
		if joinedCount(c, out, mark, len(out) == len(keep), kept) <= limit {
			return out + mark, cutInfo{Lines: countLines(text[cuts[i]:]), Tokens: total - kept, KeptLines: countLines(keep)}
		}
	}
	return cutMarker(text, total, source), cutInfo{Lines: countLines(text), Tokens: total}
}

// lineCuts returns where text may be cut (after a line, outside a fenced
// block) as byte offsets, each with the summed counts of the lines before
// it. It stops at the first cut whose sum is over limit: the sums only
// grow, so no later cut is ever kept, and counting the rest of a long
// text would be wasted.
func lineCuts(text string, limit int, c Counter) (cuts, sums []int) {
	inFence, fence := false, ""
	offset, running := 0, 0
	for rest := text; rest != ""; {
		ln := rest
		if k := strings.IndexByte(rest, '\n'); k >= 0 {
			ln = rest[:k+1]
		}
		rest = rest[len(ln):]
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
			cuts = append(cuts, offset)
			sums = append(sums, running)
			if running > limit {
				break
			}
		}
	}
	return cuts, sums
}

// cutMarker is the line that ends a cut text: how many lines (of rest) and
// tokens were cut, and from where.
func cutMarker(rest string, tokens int, source string) string {
	return "[… " + strconv.Itoa(countLines(rest)) + " more lines (" + strconv.Itoa(tokens) + " tokens) cut from " + source + "]"
}

// joinedCount is c.Count(head + tail). When the counter's counts add up
// where they meet (tail starts a line: see [Additive]) and head's count is
// known (headKnown, headTokens), only tail is counted.
func joinedCount(c Counter, head, tail string, headKnown bool, headTokens int) int {
	joined := head + tail
	if add, ok := c.(Additive); ok && headKnown && add.AddsAt(joined, len(head)) {
		return headTokens + c.Count(tail)
	}
	return c.Count(joined)
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
