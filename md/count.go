package md

import (
	"strings"
	"unicode/utf8"
)

// Additive is implemented by counters whose counts add up across some cuts
// of a text, as the exact encodings of package tokens do. The renderer uses
// it to count a scope from the counts of the scopes inside it, so that
// rendering again after one part changed counts that part and the few
// bytes around it, not the whole prompt.
type Additive interface {
	// AddsAt reports whether Count(text) == Count(text[:i]) +
	// Count(text[i:]), deciding from text[i-1] and the bytes after it up to
	// the first that is neither a space nor a tab, all inside text: so the
	// answer holds for any text those bytes are part of.
	AddsAt(text string, i int) bool
}

// countText counts text, the rendered text of a scope that began at offset
// base of the render buffer. recs are the records rendered after the
// scope's own, in document order; those at the given depth are the scopes
// directly inside it. Where such a scope's text is still in text byte for
// byte (nothing around it indented or quoted it since), its count is used:
// it is split at its first and last cut where counts add (see [Additive]),
// the part between is taken from its count, and only the parts outside are
// counted, together with the text between scopes. Without an Additive
// counter, or with no such cut, text is counted whole.
func countText(c Counter, text string, base int, recs []rec, depth int) int {
	return countStood(c, text, base, recs, depth, nil)
}

// stand is a scope written in a sizing pass as its stand-in: its text
// t[:first]+t[last:], where first and last are its first and last cuts
// where counts add (see standIn). rec is its record's index.
type stand struct{ rec, first, last int }

// countStood is countText over a text in which the scopes of stands
// (records at the given depth, in order) were written as their stand-ins:
// it counts the text with each stand-in's middle put back, which the
// stand-in's record's count covers, as countText would count that text.
func countStood[T string | []byte](c Counter, text T, base int, recs []rec, depth int, stands []stand) int {
	count := func(s T) int { return c.Count(string(s)) }
	add, ok := c.(Additive)
	if !ok || len(text) == 0 {
		return count(text)
	}
	total, pos := 0, 0
	for i := 0; i < len(recs); i++ {
		rc := &recs[i]
		if len(stands) > 0 && stands[0].rec == i {
			// Its stand-in is in text whole: the sizing pass wrote it
			// where nothing around can reshape it (see standIn).
			st := stands[0]
			stands = stands[1:]
			s, t := rc.at-base, rc.text
			inner := rc.tokens - c.Count(t[:st.first]) - c.Count(t[st.last:])
			total += count(text[pos:s+st.first]) + inner
			pos = s + st.first
			continue
		}
		if int(rc.depth) != depth || rc.tokens < 0 || len(rc.text) < 2 {
			continue
		}
		s, t := rc.at-base, rc.text
		if s < pos || s+len(t) > len(text) || string(text[s:s+len(t)]) != t {
			continue
		}
		// The text is cut before the scope's, where that is a cut where
		// counts add (or nothing is left between the last cut and it),
		// else after its first line that ends at one.
		first := 0
		if s > pos && !addsAt(add, text, s) {
			if first = firstCut(add, t); first < 0 {
				continue
			}
		}
		last := lastCut(add, t)
		if last <= 0 {
			continue
		}
		inner := rc.tokens - c.Count(t[last:])
		if first > 0 {
			inner -= c.Count(t[:first])
		}
		total += count(text[pos:s+first]) + inner
		pos = s + last
		// The records inside this one are within what was just counted.
		if k := i + int(rc.inside); len(stands) == 0 || stands[0].rec > k {
			i = k
		}
	}
	if pos == 0 {
		return count(text)
	}
	return total + count(text[pos:])
}

// firstCut is the first position in t where counts add, or -1.
func firstCut(add Additive, t string) int {
	for from := 0; ; {
		k := strings.IndexByte(t[from:], '\n')
		if k < 0 {
			return -1
		}
		i := from + k + 1
		if add.AddsAt(t, i) {
			return i
		}
		from = i
	}
}

// lastCut is the last position in t where counts add; t has at least one.
func lastCut(add Additive, t string) int {
	for end := len(t); ; {
		k := strings.LastIndexByte(t[:end], '\n')
		if k < 0 {
			return -1
		}
		if add.AddsAt(t, k+1) {
			return k + 1
		}
		end = k
	}
}

// addsAt is add.AddsAt(text, i) for text of either kind. AddsAt reads
// text[i-1] and the bytes after it up to the first that is neither a
// space nor a tab; it is given those with a few bytes either side, so
// that every rune it may decode is whole, as a string.
func addsAt[T string | []byte](add Additive, text T, i int) bool {
	end := i
	for end < len(text) && (text[end] == ' ' || text[end] == '\t') {
		end++
	}
	start, end := max(i-utf8.UTFMax, 0), min(end+utf8.UTFMax, len(text))
	return add.AddsAt(string(text[start:end]), i-start)
}
