package skills

import (
	"strings"
	"unicode/utf8"
)

// DefaultMaxExpand is how many characters of a skill body one reference
// brings into a message unless the caller says otherwise.
const DefaultMaxExpand = 16_000

// Use is one skill reference that [Set.Expand] resolved.
type Use struct {
	Name string `json:"name"`
	Ref  string `json:"ref"`  // as typed: "/pdf" or "$pdf"
	Path string `json:"path"` // the skill's location
	// Chars is the body's length in characters; Cut is how many were left
	// out of the middle to respect the cap (0 when it fit).
	Chars int `json:"chars"`
	Cut   int `json:"cut,omitempty"`
}

// Expand brings the skills that text refers to into it. A reference is
// "/name" or "$name" at the start of the text or after white space or an
// opening bracket, ending at white space, punctuation or the end, where name
// is a usable skill. Each referenced skill's body (frontmatter stripped) is
// placed before the text, in order of first reference and once per skill,
// wrapped as <skill_content name="…" location="…">…</skill_content>. The text
// itself is kept as typed, references included, so the model still sees
// what the user asked. Unknown names are left alone. A body longer than max
// characters (0 means DefaultMaxExpand) loses its middle, replaced by a
// marker line saying how much was cut and where the whole file is.
func (s *Set) Expand(text string, max int) (string, []Use) {
	if max <= 0 {
		max = DefaultMaxExpand
	}
	var uses []Use
	done := map[string]bool{}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '/' && c != '$' {
			continue
		}
		if i > 0 && !refBoundary(text[i-1]) {
			continue
		}
		j := i + 1
		for j < len(text) && isNameByte(text[j]) {
			j++
		}
		if j == i+1 || (j < len(text) && !refEnd(text[j])) {
			continue
		}
		name := text[i+1 : j]
		sk, ok := s.Get(name)
		if !ok || !sk.usable() || done[name] {
			continue
		}
		done[name] = true
		uses = append(uses, Use{Name: name, Ref: text[i:j], Path: sk.Location, Chars: utf8.RuneCountInString(sk.Body)})
	}
	if len(uses) == 0 {
		return text, nil
	}
	var b strings.Builder
	for i := range uses {
		u := &uses[i]
		sk, _ := s.Get(u.Name)
		body, cut := cutMiddle(sk.Body, max, u.Path)
		u.Cut = cut
		b.WriteString(`<skill_content name="`)
		b.WriteString(escapeAttr(u.Name))
		b.WriteString(`" location="`)
		b.WriteString(escapeAttr(u.Path))
		b.WriteString("\">\n")
		b.WriteString(body)
		b.WriteString("\n</skill_content>\n\n")
	}
	b.WriteString(text)
	return b.String(), uses
}

func refBoundary(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '(' || c == '[' || c == '"' || c == '\''
}

func refEnd(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || strings.IndexByte(`.,;:!?)]"'`, c) >= 0
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
}

func escapeAttr(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

// cutMiddle keeps the head and tail of body within max characters, cut at
// line boundaries where it can, with a marker line in between. It returns
// the result and how many characters were left out.
func cutMiddle(body string, max int, path string) (string, int) {
	n := utf8.RuneCountInString(body)
	if n <= max {
		return body, 0
	}
	runes := []rune(body)
	// Leave room for the marker, then split what is left evenly.
	marker := execute(cutTmpl(), struct {
		Cut  int
		Path string
	}{n, path})
	room := max - utf8.RuneCountInString(marker) - 4 // the marker's blank lines
	if room < 2 {
		room = 2
	}
	headEnd := room / 2
	tailStart := n - (room - headEnd)
	// Prefer whole lines: pull the head back to its last newline and push
	// the tail forward past its next one, unless that loses too much.
	if k := lastIndexRune(runes[:headEnd], '\n'); k > headEnd/2 {
		headEnd = k
	}
	if k := indexRune(runes[tailStart:], '\n'); k >= 0 && k < (n-tailStart)/2 {
		tailStart += k + 1
	}
	cut := tailStart - headEnd
	marker = execute(cutTmpl(), struct {
		Cut  int
		Path string
	}{cut, path})
	return string(runes[:headEnd]) + "\n\n" + marker + "\n\n" + string(runes[tailStart:]), cut
}

func lastIndexRune(rs []rune, r rune) int {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i] == r {
			return i
		}
	}
	return -1
}

func indexRune(rs []rune, r rune) int {
	for i, x := range rs {
		if x == r {
			return i
		}
	}
	return -1
}
