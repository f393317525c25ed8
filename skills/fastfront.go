package skills

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// fastFrontmatter reads the common frontmatter, flat "key: value" lines
// whose values YAML reads as plain text, without the YAML parser: most of
// a cold load of many skills was spent decoding three-line headers. It
// returns nil for anything it is not sure to read exactly as YAML would (a
// quote, a comment, a list, an indented line, a value YAML reads as a
// number, a boolean, a null or a date, a repeated key, …), and the caller
// then uses the parser. FuzzFastFrontmatter checks that both agree.
func fastFrontmatter(src string, lines map[string]int) map[string]any {
	if len(src) > 4096 || !utf8.ValidString(src) {
		return nil
	}
	values := map[string]any{}
	got := map[string]int{}
	rest := src
	for n := 2; ; n++ { // the opening fence is line 1
		line, next, more := strings.Cut(rest, "\n")
		if strings.Trim(line, " ") != "" {
			k, v, ok := strings.Cut(line, ":")
			if !ok || !plainKey(k) {
				return nil
			}
			if _, dup := values[k]; dup {
				return nil
			}
			if v != "" && v[0] != ' ' {
				return nil // "key:value" is one plain scalar in YAML
			}
			v = strings.Trim(v, " ")
			if v == "" || !plainValue(v) {
				return nil
			}
			values[k] = v
			got[k] = n
		}
		if !more {
			break
		}
		rest = next
	}
	for k, n := range got {
		lines[k] = n
	}
	return values
}

// plainKey accepts a key of letters, digits, "_" and "-" that YAML reads as
// that same string. YAML allows an implicit key of at most 1024 characters;
// a longer one is left to the parser, which refuses it.
func plainKey(k string) bool {
	if k == "" || len(k) > 1024 || !isLetter(k[0]) {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '-' {
			return false
		}
	}
	return !special(k)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// plainValue accepts a value that YAML reads as exactly this string: it
// starts with a letter, holds only printable characters, and nothing in it
// can start a comment, a mapping, an anchor or a flow collection.
func plainValue(v string) bool {
	r, _ := utf8.DecodeRuneInString(v)
	if !unicode.IsLetter(r) || special(v) {
		return false
	}
	if strings.Contains(v, ": ") || strings.Contains(v, " #") || strings.HasSuffix(v, ":") {
		return false
	}
	for _, r := range v {
		if r == '\t' || r == '\uFEFF' || !unicode.IsPrint(r) && r != ' ' || r >= 0x80 && !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

// special reports whether s is a word YAML may read as something other
// than text: a boolean, a null, or YAML 1.1's yes/no/on/off and y/n.
func special(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n":
		return true
	}
	return false
}
