package tokens

import (
	"encoding/binary"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Character classes of the split patterns, one bit each. They are the
// classes regexp2 tests, from Go's unicode tables: \s is unicode.IsSpace
// (White_Space), \p{X} is unicode.Categories["X"].
const (
	cLetter  = 1 << iota // \p{L}
	cNumber              // \p{N}
	cSpace               // \s
	cUpper               // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], o200k's cased-upper class
	cLower               // [\p{Ll}\p{Lm}\p{Lo}\p{M}], o200k's cased-lower class
	cNewline             // \r or \n
)

// tableRunes is how far the class table reaches: the Basic and
// Supplementary Multilingual Planes, which hold nearly all text (emoji
// included). Runes beyond are classified through the unicode tables.
const tableRunes = 0x20000

var (
	classOnce  sync.Once
	classTable [tableRunes]uint8
)

// asciiClass holds the classes of the ASCII runes, so the common case needs
// no table built and no decoding. It is filled by hand rather than through
// classify, whose unicode table look-ups cost every process 30,000
// instructions at start-up; TestClassTable checks that they agree.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		switch {
		case 'A' <= r && r <= 'Z':
			t[r] = cLetter | cUpper
		case 'a' <= r && r <= 'z':
			t[r] = cLetter | cLower
		case '0' <= r && r <= '9':
			t[r] = cNumber
		case r == '\r' || r == '\n':
			t[r] = cSpace | cNewline
		case r == ' ' || '\t' <= r && r <= '\r':
			t[r] = cSpace
		}
	}
	return t
}()

// loadClasses fills the class table from the unicode range tables, walking
// their ranges rather than testing every rune; it takes a fraction of a
// millisecond.
func loadClasses() {
	fill := func(lo, hi, stride int, bits uint8) {
		if lo >= tableRunes {
			return
		}
		hi = min(hi, tableRunes-1)
		if stride == 1 {
			// Eight runes at a time: the big ranges (CJK, Hangul) are most
			// of the work.
			s := classTable[lo : hi+1]
			pattern := uint64(bits) * 0x0101010101010101
			for len(s) >= 8 {
				binary.LittleEndian.PutUint64(s, binary.LittleEndian.Uint64(s)|pattern)
				s = s[8:]
			}
			for i := range s {
				s[i] |= bits
			}
			return
		}
		for c := lo; c <= hi; c += stride {
			classTable[c] |= bits
		}
	}
	set := func(rt *unicode.RangeTable, bits uint8) {
		for _, r := range rt.R16 {
			fill(int(r.Lo), int(r.Hi), int(r.Stride), bits)
		}
		for _, r := range rt.R32 {
			fill(int(r.Lo), int(r.Hi), int(r.Stride), bits)
		}
	}
	set(unicode.Lu, cLetter|cUpper)
	set(unicode.Lt, cLetter|cUpper)
	set(unicode.Ll, cLetter|cLower)
	set(unicode.Lm, cLetter|cUpper|cLower)
	set(unicode.Lo, cLetter|cUpper|cLower)
	set(unicode.M, cUpper|cLower)
	set(unicode.N, cNumber)
	set(unicode.White_Space, cSpace)
	classTable['\r'] |= cNewline
	classTable['\n'] |= cNewline
}

// classify computes the classes of r from the unicode tables directly. The
// table is built to agree with it; runes past the table use it.
func classify(r rune) uint8 {
	var c uint8
	switch {
	case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
		c = cLetter | cUpper
	case unicode.Is(unicode.Ll, r):
		c = cLetter | cLower
	case unicode.Is(unicode.Lm, r), unicode.Is(unicode.Lo, r):
		c = cLetter | cUpper | cLower
	case unicode.Is(unicode.M, r):
		c = cUpper | cLower
	}
	if unicode.Is(unicode.N, r) {
		c |= cNumber
	}
	if unicode.IsSpace(r) {
		c |= cSpace
	}
	if r == '\r' || r == '\n' {
		c |= cNewline
	}
	return c
}

// classAt returns the classes of the rune that starts at text[i] and its
// length in bytes. text must be valid UTF-8 and i < len(text). It is small
// enough to inline, so ASCII costs one table load.
func classAt(text string, i int) (uint8, int) {
	if b := text[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	return classAtMultibyte(text[i:])
}

func classAtMultibyte(text string) (uint8, int) {
	r, size := utf8.DecodeRuneInString(text)
	if r < tableRunes {
		return classTable[r], size
	}
	return classify(r), size
}
