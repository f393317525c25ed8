package gateway

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// fastContent reads the text of a streamed chunk in its common shape: one
// choice, index 0, whose delta carries content (and perhaps a role) but no
// tool calls. ok is false for anything else, and the caller decodes the
// chunk in full; when ok is true, content is what encoding/json would have
// read (TestFastContentAgreesWithJSON). A relayed reply is mostly such
// chunks, and reading them with encoding/json cost more than the rest of
// the gateway's work on a request.
func fastContent(data []byte) (content []byte, ok bool) {
	p := &scan{b: data}
	p.ws()
	if !p.eat('{') {
		return nil, false
	}
	seen := false
	if !p.members(func(key []byte) bool {
		if string(key) != "choices" {
			// encoding/json matches keys without regard to case
			return !bytes.EqualFold(key, []byte("choices")) && p.skip()
		}
		if seen || !p.eat('[') {
			return false
		}
		seen = true
		var c []byte
		if c, ok = p.choice(); !ok {
			return false
		}
		content = c
		p.ws()
		return p.eat(']')
	}) {
		return nil, false
	}
	p.ws()
	return content, seen && p.i == len(p.b)
}

// scan is a cursor over JSON text.
type scan struct {
	b []byte
	i int
}

func (p *scan) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *scan) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// members reads an object's members after its '{', calling f with each
// key with the cursor before the value.
func (p *scan) members(f func(key []byte) bool) bool {
	if p.eat('}') {
		return true
	}
	for {
		p.ws()
		key, ok := p.str()
		if !ok || !p.eat(':') || !f(key) {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat('}')
	}
}

// choice reads the one element of "choices" and returns its content.
func (p *scan) choice() (content []byte, ok bool) {
	if !p.eat('{') {
		return nil, false
	}
	index, delta := false, false
	if !p.members(func(key []byte) bool {
		switch string(key) {
		case "index":
			p.ws()
			if index || !bytes.HasPrefix(p.b[p.i:], []byte("0")) {
				return false
			}
			p.i++
			index = true
			return p.i == len(p.b) || !isNumByte(p.b[p.i])
		case "delta":
			if delta || !p.eat('{') {
				return false
			}
			delta = true
			return p.members(func(key []byte) bool {
				switch string(key) {
				case "content":
					p.ws()
					if p.null() {
						return true
					}
					c, ok := p.str()
					content = c
					return ok
				case "tool_calls", "function_call":
					return false
				}
				return !foldsTo(key, "content", "tool_calls") && p.skip()
			})
		}
		return !foldsTo(key, "index", "delta") && p.skip()
	}) {
		return nil, false
	}
	return content, index && delta
}

// foldsTo reports whether key is one of names but for case, which
// encoding/json would read as that field.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func (p *scan) null() bool {
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += 4
		return true
	}
	return false
}

// str reads a string at the cursor and returns its value.
func (p *scan) str() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	// Most strings have no escape: find the closing quote at once.
	if q := bytes.IndexByte(p.b[p.i+1:], '"'); q >= 0 {
		raw := p.b[p.i+1 : p.i+1+q]
		if bytes.IndexByte(raw, '\\') < 0 && !hasControl(raw) && utf8.Valid(raw) {
			p.i += q + 2
			return raw, true
		}
	}
	start, escaped := p.i, false
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '\\':
			escaped = true
			j++
		case c == '"':
			p.i = j + 1
			raw := p.b[start+1 : j]
			if !escaped && utf8.Valid(raw) {
				return raw, true
			}
			var s string
			if json.Unmarshal(p.b[start:j+1], &s) != nil {
				return nil, false
			}
			return []byte(s), true
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// skip passes over one value of any kind.
func (p *scan) skip() bool {
	p.ws()
	if p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '{':
		p.i++
		return p.members(func([]byte) bool { return p.skip() })
	case c == '[':
		p.i++
		if p.eat(']') {
			return true
		}
		for {
			if !p.skip() {
				return false
			}
			if p.eat(',') {
				continue
			}
			return p.eat(']')
		}
	case c == 't' && bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
	case c == 'f' && bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
	case c == 'n':
		return p.null()
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.b) && isNumByte(p.b[p.i]) {
			p.i++
		}
		return validNumber(p.b[start:p.i])
	default:
		return false
	}
	return true
}

// validNumber reports whether b is one JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? (json.Valid says the
// same, at several times the cost for the "created" and "index" of every
// chunk).
func validNumber(b []byte) bool {
	i := 0
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(b)
}

// hasControl reports whether b holds a byte below 0x20, which a JSON
// string may not hold raw; eight bytes at a time.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 borrows into its high bit when 0x20 is taken
		// from it, and had that bit clear.
		if (x-0x20*ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}
