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
	p := cursor{b: b}
	p.ws()
	if !p.eat('{') {
		return nil, false
	}
	p.ws()
	if p.eat('}') {
		return nil, true
	}
	for {
		p.ws()
		ks := p.i
		if !p.skip() {
			return nil, false
		}
		rawKey := b[ks:p.i]
		var key string
		if bytes.IndexByte(rawKey, '\\') < 0 {
			key = string(rawKey[1 : len(rawKey)-1])
		} else if json.Unmarshal(rawKey, &key) != nil {
			return nil, false
		}
		p.ws()
		if !p.eat(':') {
			return nil, false
		}
		p.ws()
		vs := p.i
		if !p.skip() {
			return nil, false
		}
		members = append(members, Member{RawKey: rawKey, Key: key, Value: b[vs:p.i:p.i]})
		p.ws()
		if p.eat(',') {
			continue
		}
		return members, p.eat('}')
	}
}

// Array splits b, valid JSON, into its elements in order. ok is false when
// b is not an array.
func Array(b []byte) (elems [][]byte, ok bool) {
	p := cursor{b: b}
	p.ws()
	if !p.eat('[') {
		return nil, false
	}
	p.ws()
	if p.eat(']') {
		return [][]byte{}, true
	}
	for {
		p.ws()
		s := p.i
		if !p.skip() {
			return nil, false
		}
		elems = append(elems, b[s:p.i:p.i])
		p.ws()
		if p.eat(',') {
			continue
		}
		return elems, p.eat(']')
	}
}

type cursor struct {
	b []byte
	i int
}

func (p *cursor) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *cursor) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// skip passes over one value, which the caller knows to be valid.
func (p *cursor) skip() bool {
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
