package template

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// lexer splits the words of an action: "(", ")" and "|" stand alone, a
// quoted string is one word, and white space separates the rest.
type lexer struct{ s string }

func (l *lexer) words() ([]string, error) {
	var out []string
	s := l.s
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == '|':
			out = append(out, s[i:i+1])
			i++
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return nil, errors.New("unclosed string")
			}
			out = append(out, s[i:j+1])
			i = j + 1
		case c == '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				return nil, errors.New("unclosed raw string")
			}
			out = append(out, s[i:i+j+2])
			i += j + 2
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t\r\n()|\"`", s[j]) < 0 {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out, nil
}

func unquote(w string) (string, error) { return strconv.Unquote(w) }

// number reads an integer (as int) or a floating-point number (as float64).
func number(w string) (reflect.Value, error) {
	if i, err := strconv.ParseInt(w, 0, 64); err == nil {
		return reflect.ValueOf(int(i)), nil
	}
	f, err := strconv.ParseFloat(w, 64)
	if err != nil {
		return reflect.Value{}, err
	}
	return reflect.ValueOf(f), nil
}
