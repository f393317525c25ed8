package tokens

import "unicode/utf8"

// Estimate is the "chars4" counter: one token for every four characters,
// rounded up, so that any non-empty text costs at least one token.
//
// A character is a Unicode code point (a rune). Counting bytes would charge
// CJK text three times what English pays for the same number of
// characters; counting UTF-16 units, as JavaScript's length does, would
// charge two for an emoji but one for a letter, an accident of an encoding
// loom does not use. Runes are also what Go counts without allocating.
//
// For English prose and code the estimate lands within about 20% of
// o200k_base. For CJK it undercounts (about one token per character there).
type Estimate struct{}

// Name returns "chars4".
func (Estimate) Name() string { return Chars4 }

// Count returns ceil(runes/4), where each run of invalid UTF-8 counts as the
// one U+FFFD it would be replaced by.
func (Estimate) Count(text string) int {
	n := runeCount(text)
	return (n + 3) / 4
}

// runeCount counts the runes of valid(text) without building it.
func runeCount(text string) int {
	if utf8.ValidString(text) {
		return utf8.RuneCountInString(text)
	}
	n := 0
	bad := false
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if r == utf8.RuneError && size == 1 {
			if !bad {
				n++
			}
			bad = true
			continue
		}
		bad = false
		n++
	}
	return n
}
