// Package jsonscan splits JSON text that is already known to be valid into
// its parts without decoding them: an object into its members, an array
// into its elements. A request handler that checks a body once
// (json.Valid) and then needs only to find a few fields, or to hand each
// element of a long array to its own decoder, saves encoding/json's second
// pass and its copies.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"iter"
	"strings"
	"unicode/utf8"
)

// Member is one member of an object: its key as written (quotes and
// escapes included), its key decoded, and its value as written.
type Member struct {
	RawKey []byte
	Key    string
	Value  []byte
}

// Object splits b, valid JSON, into its members in order. ok is false when
// b is not an object.
func Object(b []byte) (members []Member, ok bool) {
	p := Cursor{b: b}
	p.WS()
	if !p.Eat('{') {
		return nil, false
	}
	p.WS()
	if p.Eat('}') {
		return nil, true
	}
	for {
		p.WS()
		ks := p.i
		if !p.Skip() {
			return nil, false
		}
		rawKey := b[ks:p.i]
		key, ok := decodeKey(rawKey)
		if !ok {
			return nil, false
		}
		p.WS()
		if !p.Eat(':') {
			return nil, false
		}
		p.WS()
		vs := p.i
		if !p.Skip() {
			return nil, false
		}
		members = append(members, Member{RawKey: rawKey, Key: key, Value: b[vs:p.i:p.i]})
		p.WS()
		if p.Eat(',') {
			continue
		}
		return members, p.Eat('}')
	}
}

// decodeKey decodes a key as encoding/json does. A key with no escape
// and only UTF-8 is its bytes; any other goes through encoding/json, which
// also turns each byte that is not UTF-8 into U+FFFD (taken as it was,
// {"\xc6":{}} had a key that encoding/json reads as "\ufffd").
func decodeKey(rawKey []byte) (key string, ok bool) {
	inner := rawKey[1 : len(rawKey)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	return key, json.Unmarshal(rawKey, &key) == nil
}

// Lookup returns the value of object b's member that encoding/json would
// decode into a field named name (lower-case ASCII letters): the last
// whose key is name, ignoring case. found is false when there is none,
// or when b, valid JSON, is not an object. The value is a slice of b,
// where a json.RawMessage field would copy it.
func Lookup(b []byte, name string) (value []byte, found bool) {
	p := Cursor{b: b}
	p.WS()
	if !p.Eat('{') {
		return nil, false
	}
	for {
		p.WS()
		ks := p.i
		if !p.Skip() {
			return value, found
		}
		rawKey := b[ks:p.i]
		match := false
		if bytes.IndexByte(rawKey, '\\') < 0 {
			match = len(rawKey) == len(name)+2 && strings.EqualFold(string(rawKey[1:len(rawKey)-1]), name)
		} else {
			var key string
			match = json.Unmarshal(rawKey, &key) == nil && strings.EqualFold(key, name)
		}
		p.WS()
		if !p.Eat(':') {
			return value, found
		}
		p.WS()
		vs := p.i
		if !p.Skip() {
			return value, found
		}
		if match {
			value, found = b[vs:p.i:p.i], true
		}
		p.WS()
		if !p.Eat(',') {
			return value, found
		}
	}
}

// ArrayLen counts the elements of b, valid JSON, as Elements yields them,
// keeping none, and stops past max (max < 0: no bound), reporting more:
// a list of a million tiny elements costs nothing to refuse, and a
// decoder sizes its slice once with it. ok is false when b is not an
// array.
func ArrayLen(b []byte, max int) (n int, more, ok bool) {
	more, ok = eachElement(b, max, func([]byte) bool { n++; return true })
	if !ok {
		return 0, false, false
	}
	return n, more, true
}

// Elements yields the elements of array b, valid JSON, in order with
// their index, keeping none: a decoder that sized its list with ArrayLen
// decodes each element straight into it, with no list of the elements
// made first (for a list of tiny messages, that list alone was 0.75 times
// the body). Nothing is yielded when b is not an array.
func Elements(b []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		i := 0
		eachElement(b, -1, func(e []byte) bool {
			i++
			return yield(i-1, e)
		})
	}
}

// ObjectLen counts the members of object b, valid JSON, stopping past
// max (max < 0: no bound) and reporting more; ok is false when b is not an
// object. It keeps nothing, so a reader can refuse an object of a million
// members before decoding it.
func ObjectLen(b []byte, max int) (n int, more, ok bool) {
	p := Cursor{b: b}
	p.WS()
	if !p.Eat('{') {
		return 0, false, false
	}
	p.WS()
	if p.Eat('}') {
		return 0, false, true
	}
	for ; ; n++ {
		if n == max {
			return n, true, true
		}
		p.WS()
		if !p.Skip() { // the key
			return 0, false, false
		}
		p.WS()
		if !p.Eat(':') {
			return 0, false, false
		}
		p.WS()
		if !p.Skip() {
			return 0, false, false
		}
		p.WS()
		if p.Eat(',') {
			continue
		}
		if !p.Eat('}') {
			return 0, false, false
		}
		return n + 1, false, true
	}
}

// eachElement hands each element of array b to each, at most max of them
// (max < 0: all), until each returns false; more says there were others.
func eachElement(b []byte, max int, each func([]byte) bool) (more, ok bool) {
	p := Cursor{b: b}
	p.WS()
	if !p.Eat('[') {
		return false, false
	}
	p.WS()
	if p.Eat(']') {
		return false, true
	}
	for n := 0; ; n++ {
		if n == max {
			return true, true
		}
		p.WS()
		s := p.i
		if !p.Skip() {
			return false, false
		}
		if !each(b[s:p.i:p.i]) {
			return false, true
		}
		p.WS()
		if p.Eat(',') {
			continue
		}
		return false, p.Eat(']')
	}
}

// Cursor is a position in JSON text, for readers that pick a few fields
// out of it by hand (messages' fast message decoder).
type Cursor struct {
	b []byte
	i int
}

// NewCursor returns a cursor at the start of b.
func NewCursor(b []byte) *Cursor { return &Cursor{b: b} }

// Pos is the cursor's offset in its text.
func (p *Cursor) Pos() int { return p.i }

// WS passes over white space.
func (p *Cursor) WS() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// Eat passes over c if it is next, and reports whether it was.
func (p *Cursor) Eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// PlainString reads a string with no escape and no control character at
// the cursor (a key, most often) and returns its bytes: plain is false for
// anything else, and for bytes that are not UTF-8.
func (p *Cursor) PlainString() (s []byte, plain bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s = p.b[p.i+1 : j]
			p.i = j + 1
			return s, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// Skip passes over one value ([Skip]).
func (p *Cursor) Skip() bool {
	end, ok := Skip(p.b, p.i)
	if ok {
		p.i = end
	}
	return ok
}

// Skip passes over the value that starts at b[i] and returns where it ends.
// It checks brackets and strings only as far as finding that end needs: the
// caller either knows b to be valid or reads what Skip passed with a
// function that checks it in full.
func Skip(b []byte, i int) (end int, ok bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return i, false
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, ok := Skip(b, j)
				if !ok {
					return i, false
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return i, false
	default:
		j := i
		for j < len(b) && !(b[j] == ',' || b[j] == '}' || b[j] == ']' || b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j++
		}
		return j, j > i
	}
}

// Skeleton returns b, valid JSON, without white space and with every
// string value (not key) of at least min bytes, quotes included, written
// as "": the same members, types and nesting in a fraction of the bytes
// when long strings make most of b. A decoder that checks names and types
// (encoding/json's unknown-field check, which copies the whole text into
// its own growing buffer first) can run on the skeleton and leave the
// long strings to one that reads b in place. The result is allocated
// once, at its exact size.
func Skeleton(b []byte, min int) []byte {
	out := make([]byte, 0, skeleton(b, min, nil))
	skeleton(b, min, func(p []byte) { out = append(out, p...) })
	return out
}

// skeleton walks b as Skeleton does, handing each piece it keeps to emit
// (when emit is not nil), and returns the kept length.
func skeleton(b []byte, min int, emit func([]byte)) int {
	kept := 0
	keep := func(p []byte) {
		kept += len(p)
		if emit != nil {
			emit(p)
		}
	}
	empty := []byte(`""`)
	for i := 0; i < len(b); {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			end, ok := Skip(b, i)
			if !ok { // not valid JSON: keep the rest as it is
				keep(b[i:])
				return kept
			}
			if end-i >= min && !beforeColon(b, end) {
				keep(empty)
			} else {
				keep(b[i:end])
			}
			i = end
		default:
			j := i + 1
			for j < len(b) && b[j] != '"' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
				j++
			}
			keep(b[i:j])
			i = j
		}
	}
	return kept
}

// beforeColon reports whether the first byte at or after i that is not
// white space is a colon: the string that ends at i is a key.
func beforeColon(b []byte, i int) bool {
	p := Cursor{b: b, i: i}
	p.WS()
	return p.Eat(':')
}
