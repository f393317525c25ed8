package tokens

import (
	"strings"
	"unicode/utf8"
)

// The pre-tokenizers: hand-written matchers for the split patterns below,
// each returning where the piece that starts at text[i] ends. They follow
// a backtracking regexp engine's rules (leftmost alternative first, greedy
// quantifiers that give back what a later part needs), which is how
// tiktoken and regexp2 run the patterns. split_test.go checks them against
// regexp2 running the patterns themselves.
//
// Every rune starts some alternative (a letter the word ones, a number
// \p{N}, whitespace \s, anything else [^\s\p{L}\p{N}]), so the pieces
// cover the text: each starts where the last one ended.
//
// text must be valid UTF-8, and every function takes i < len(text).

// The patterns, from tiktoken's openai_public.py.
const (
	o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// prefixable is [^\r\n\p{L}\p{N}], the optional first rune of a word.
func prefixable(c uint8) bool { return c&(cLetter|cNumber|cNewline) == 0 }

// other is [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls.
func other(c uint8) bool { return c&(cSpace|cLetter|cNumber) == 0 }

// nextO200k returns the end of o200k_base's piece at text[i].
func nextO200k(text string, i int) int {
	c, size := classAt(text, i)
	pre := prefixable(c) && i+size < len(text)
	// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|…)?
	if pre {
		if end := lowerWord(text, i+size); end >= 0 {
			return end
		}
	}
	if end := lowerWord(text, i); end >= 0 {
		return end
	}
	// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|…)?
	if pre {
		if end := upperWord(text, i+size); end >= 0 {
			return end
		}
	}
	if end := upperWord(text, i); end >= 0 {
		return end
	}
	return rest(text, i, c, size, true)
}

// nextCl100k returns the end of cl100k_base's piece at text[i].
func nextCl100k(text string, i int) int {
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if end := contraction(text, i); end > i {
		return end
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	c, size := classAt(text, i)
	start := -1
	if c&cLetter != 0 {
		start = i
	} else if prefixable(c) && i+size < len(text) {
		if c2, _ := classAt(text, i+size); c2&cLetter != 0 {
			start = i + size
		}
	}
	if start >= 0 {
		return run(text, start, cLetter)
	}
	return rest(text, i, c, size, false)
}

// rest matches the alternatives the two patterns share, after the words;
// c and size describe the rune at text[i]. slash says whether a slash may
// trail punctuation, as in o200k_base.
func rest(text string, i int, c uint8, size int, slash bool) int {
	// \p{N}{1,3}
	if c&cNumber != 0 {
		end := i + size
		for k := 1; k < 3 && end < len(text); k++ {
			c, size := classAt(text, end)
			if c&cNumber == 0 {
				break
			}
			end += size
		}
		return end
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*' (or [\r\n/]*)
	start := -1
	if text[i] == ' ' {
		if i+1 < len(text) {
			if c2, _ := classAt(text, i+1); other(c2) {
				start = i + 1
			}
		}
	} else if other(c) {
		start = i
	}
	if start >= 0 {
		end := start
		for end < len(text) {
			c, size := classAt(text, end)
			if !other(c) {
				break
			}
			end += size
		}
		for end < len(text) && (text[end] == '\r' || text[end] == '\n' || slash && text[end] == '/') {
			end++
		}
		return end
	}
	// Only whitespace is left: \s*[\r\n]+ | \s+(?!\S) | \s+.
	// \s*[\r\n]+ ends after the run's last newline, if it has one.
	// \s+(?!\S) takes the run, or all of it but the last rune when
	// something other than space follows. \s+ takes a lone space.
	end, last, afterNewline := i, i, -1
	for end < len(text) {
		if text[end] == ' ' { // the common case, kept short
			last = end
			end++
			continue
		}
		c, size := classAt(text, end)
		if c&cSpace == 0 {
			break
		}
		last = end
		end += size
		if c&cNewline != 0 {
			afterNewline = end
		}
	}
	switch {
	case afterNewline >= 0:
		return afterNewline
	case end == len(text) || last == i:
		return end
	default:
		return last
	}
}

// lowerWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// and an optional contraction at text[s], or returns -1.
func lowerWord(text string, s int) int {
	// Take the greedy run of upper-class runes, remembering the last one
	// that is also lower-class: if no lower-class rune follows the run,
	// the engine gives runes back until that one can start [...]+.
	p, lastLower, lastSize := s, -1, 0
	for p < len(text) {
		c, size := classAt(text, p)
		if c&cUpper == 0 {
			if c&cLower != 0 {
				return contraction(text, run(text, p, cLower))
			}
			break
		}
		if c&cLower != 0 {
			lastLower, lastSize = p, size
		}
		p += size
	}
	if lastLower < 0 {
		return -1
	}
	// The runes after lastLower are not lower-class, so [...]+ takes one.
	return contraction(text, lastLower+lastSize)
}

// upperWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// and an optional contraction at text[s], or returns -1.
func upperWord(text string, s int) int {
	p := run(text, s, cUpper)
	if p == s {
		return -1
	}
	return contraction(text, run(text, p, cLower))
}

// run returns the end of the run of runes with class bit at text[p:].
func run(text string, p int, bit uint8) int {
	for p < len(text) {
		if b := text[p]; b < utf8.RuneSelf { // classAt, inlined by hand
			if asciiClass[b]&bit == 0 {
				break
			}
			p++
			continue
		}
		c, size := classAtMultibyte(text[p:])
		if c&bit == 0 {
			break
		}
		p += size
	}
	return p
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at text[p],
// or p when there is none. regexp2 ignores case by simple case folding:
// the letters match their ASCII capitals, and s also matches ſ (U+017F,
// LATIN SMALL LETTER LONG S), the one other rune in their fold orbits.
// The apostrophe is U+0027 only.
func contraction(text string, p int) int {
	if p+1 >= len(text) || text[p] != '\'' {
		return p
	}
	if strings.HasPrefix(text[p+1:], "ſ") {
		return p + 1 + len("ſ")
	}
	switch text[p+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return p + 2
	case 'r', 'v':
		if p+2 < len(text) && text[p+2]|0x20 == 'e' {
			return p + 3
		}
	case 'l':
		if p+2 < len(text) && text[p+2]|0x20 == 'l' {
			return p + 3
		}
	}
	return p
}
