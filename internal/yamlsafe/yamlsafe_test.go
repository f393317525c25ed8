package yamlsafe

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"a: [", "line 1: did not find expected node content"},
		{"a: 1\nb: [", "line 2: did not find expected node content"},
		{"a: 1\n---\nb: 2\n", "line 3: more than one YAML document"},
		{"x: " + strings.Repeat("[", 65), "line 1: nested more than 64 levels deep"},
	} {
		_, err := Parse([]byte(tt.in), Limits{})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if tt.want != "" && !strings.HasPrefix(got, tt.want) {
			t.Errorf("%.20q: got %q, want %q", tt.in, got, tt.want)
		}
	}
	// Every error names the line where the problem is (yaml.v3's parser
	// alone counts from 0).
	for _, tt := range []struct {
		in   string
		line int
	}{
		{"name: [a\n", 1},
		{"name: broken\ndescription: [unclosed\n", 2},
		{"a: 1\nb: 2\nc: [x\nd: 4\n", 3},
		{"a: 1\nb: {x: 1\n", 2},
		{"a: 1\n- x\n", 2},
		{"a: 1\nb: b: c\n", 2},
		{"a: 1\n\tb: 2\n", 2},
		{"a: 1\nb: \"unterminated\n", 2},
		{"\n\n%YAML 1.1\n%YAML 1.1\n---\na: 1\n", 4},
	} {
		_, err := Parse([]byte(tt.in), Limits{})
		var e *Error
		if !errors.As(err, &e) || e.Line != tt.line {
			t.Errorf("%q: %v; want line %d", tt.in, err, tt.line)
		}
	}
	if _, err := Parse(make([]byte, 11), Limits{MaxBytes: 10}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("size: %v", err)
	}
	for _, empty := range []string{"", "# c\n", "---\n", "null\n"} {
		if n, err := Parse([]byte(empty), Limits{}); n != nil || err != nil {
			t.Errorf("%q: %v %v", empty, n, err)
		}
	}
}

func TestTooDeep(t *testing.T) {
	for _, tt := range []struct {
		in   string
		line int
	}{
		{"a: [[[x]]]", 0},
		{"a: '[[[[[[' \n", 0},
		{"a: \"[[[[[[\\\"[[[\"\n", 0},
		{"a: x[[[[[[\n", 0},
		{"# [[[[[[\n", 0},
		{"a: 1\nb: [[[[[[\n", 2},
		{"a: [ '[[[[[[', [[[ ]]] ]", 0},
		{"a: [ '[[[[[[', [[[[ ]]]] ]", 1},
		{"a: [[[ # [[[[[[\n ]]]\n", 0},
		// Brackets inside a block plain scalar are text, wherever it starts.
		{"A: A   [[[[[[\n", 0},
		{"- A [[[[[[\n", 0},
		{"key [[[[[[: v\n", 0},
		{"a: b # c [[[[[[\n", 0},
		// ... but a plain scalar ends at ": ", and what follows can open flows.
		{"a: b\nc: [[[[[\n", 2},
		{"k: v: [[[[[\n", 1},
		{"a:[[[[[\n", 0}, // one scalar: ":" opens a value only before a space
		{"- [[[[[\n", 1},
		{"!t [[[[[\n", 1},
	} {
		if got := tooDeep([]byte(tt.in), 4); got != tt.line {
			t.Errorf("%q: line %d, want %d", tt.in, got, tt.line)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("a: [b, {c: d}]\n")
	f.Add("a: &x [1]\nb: *x\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, err := Parse([]byte(s), Limits{MaxBytes: 1 << 16})
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}

// tooDeepReference is tooDeep as one loop, before it was split into
// flowScan's steps: the split must not change a single answer.
func tooDeepReference(data []byte, max int) int {
	depth, line := 0, 1
	boundary := true // at the start of a token: line start, after space , [ { :
	plain := false   // inside a block-context plain scalar
	for i := 0; i < len(data); i++ {
		c := data[i]
		if plain && c != '\n' {
			next := byte('\n')
			if i+1 < len(data) {
				next = data[i+1]
			}
			switch {
			case c == ':' && (next == ' ' || next == '\t' || next == '\n' || next == '\r'):
				plain, boundary = false, true
			case (c == ' ' || c == '\t') && next == '#':
				plain, boundary = false, true
			}
			continue
		}
		switch {
		case c == '\n':
			line++
			boundary, plain = true, false
			continue
		case depth == 0 && boundary && !strings.ContainsRune(" \t\r[]{}#\"'-?:,|>!&*%@`", rune(c)):
			plain, boundary = true, false
			continue
		case c == '#' && boundary:
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i--
			continue
		case (c == '"' || c == '\'') && boundary:
			for i++; i < len(data); i++ {
				if data[i] == '\n' {
					line++
				}
				if c == '"' && data[i] == '\\' {
					i++
					continue
				}
				if data[i] == c {
					if c == '\'' && i+1 < len(data) && data[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
			boundary = false
			continue
		case (c == '[' || c == '{') && (boundary || depth > 0):
			depth++
			if depth > max {
				return line
			}
			boundary = true
			continue
		case (c == ']' || c == '}') && depth > 0:
			depth--
		}
		boundary = c == ' ' || c == '\t' || c == ',' || c == ':' || c == '-' && boundary
	}
	return 0
}

// tooDeep agrees with its one-loop reference on random texts made of the
// bytes that matter to it.
func TestTooDeepAgreesWithReference(t *testing.T) {
	const alphabet = "[]{}#\"'\\\n \t:-,ab?|&*"
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200_000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		for _, max := range []int{0, 1, 3} {
			if got, want := tooDeep(b, max), tooDeepReference(b, max); got != want {
				t.Fatalf("tooDeep(%q, %d) = %d, the reference says %d", b, max, got, want)
			}
		}
	}
}
