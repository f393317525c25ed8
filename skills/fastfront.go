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
	type keyLine struct {
		key  string
		line int
	}
	var gotBuf [8]keyLine
	got := gotBuf[:0]
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
			if v != "" && v[0] == '{' {
				// nanobot's one-line JSON metadata, which YAML reads as a
				// flow mapping.
				m, ok := flowJSON(v)
				if !ok {
					return nil
				}
				values[k] = m
				got = append(got, keyLine{k, n})
			} else {
				if v == "" || !plainValue(v) {
					return nil
				}
				values[k] = v
				got = append(got, keyLine{k, n})
			}
		}
		if !more {
			break
		}
		rest = next
	}
	for _, kl := range got {
		lines[kl.key] = kl.line
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
	for i := 0; i < len(v); {
		if c := v[i]; c < utf8.RuneSelf {
			// ASCII: printable is 0x20 (the space) to 0x7e.
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		if r == '\uFEFF' || !unicode.IsPrint(r) || !unicode.IsGraphic(r) {
			return false
		}
		i += size
	}
	return true
}

// special reports whether s is a word YAML may read as something other
// than text: a boolean, a null, or YAML 1.1's yes/no/on/off and y/n.
func special(s string) bool {
	if len(s) > len("false") {
		return false // no lower-casing (and copying) of a long value
	}
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n":
		return true
	}
	return false
}

// flowJSON reads a one-line JSON object that YAML reads as the same flow
// mapping: objects with distinct keys, arrays, strings without escapes or
// characters YAML treats otherwise, and true or false, separated by commas
// and colons with at most spaces around them. It refuses numbers and null
// (YAML has its own idea of them), and anything else, for the parser.
func flowJSON(v string) (map[string]any, bool) {
	p := flowParser{s: v}
	val, ok := p.value(0)
	p.space()
	m, isMap := val.(map[string]any)
	if !ok || !isMap || p.i != len(p.s) {
		return nil, false
	}
	return m, true
}

type flowParser struct {
	s string
	i int
}

func (p *flowParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *flowParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

const maxFlowDepth = 8

func (p *flowParser) value(depth int) (any, bool) {
	if depth > maxFlowDepth {
		return nil, false
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		if p.eat('}') {
			return m, true
		}
		for {
			p.space()
			k, ok := p.str()
			if !ok || !p.eat(':') {
				return nil, false
			}
			if _, dup := m[k]; dup {
				return nil, false
			}
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			if p.eat('}') {
				return m, true
			}
			if !p.eat(',') {
				return nil, false
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		if p.eat(']') {
			return a, true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			if p.eat(']') {
				return a, true
			}
			if !p.eat(',') {
				return nil, false
			}
		}
	case c == '"':
		return p.str()
	case strings.HasPrefix(p.s[p.i:], "true"):
		p.i += 4
		return true, p.boundary()
	case strings.HasPrefix(p.s[p.i:], "false"):
		p.i += 5
		return false, p.boundary()
	}
	return nil, false
}

// boundary reports whether a literal ends here, as YAML would end it.
func (p *flowParser) boundary() bool {
	if p.i == len(p.s) {
		return true
	}
	switch p.s[p.i] {
	case ' ', ',', '}', ']':
		return true
	}
	return false
}

// str reads a double-quoted string with nothing in it that YAML would read
// differently: no backslash, no control or non-printing character.
func (p *flowParser) str() (string, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", false
	}
	end := strings.IndexByte(p.s[p.i+1:], '"')
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	for _, r := range v {
		if r == '\\' || r == '\uFEFF' || !unicode.IsPrint(r) && r != ' ' || r >= 0x80 && !unicode.IsGraphic(r) {
			return "", false
		}
	}
	p.i += end + 2
	return v, true
}
