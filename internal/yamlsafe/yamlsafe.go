// Package yamlsafe parses YAML from untrusted files into a node tree in time
// and memory linear in the input: the size is capped before parsing, flow
// nesting ([[[…) is capped before the parser sees it, and every error is
// one line with a line number.
//
// It wraps go.yaml.in/yaml/v3, whose parser is linear on the inputs that
// made github.com/goccy/go-yaml quadratic (tens of thousands of keys, deep
// flow nesting); config's BenchmarkParse shows both side by side.
package yamlsafe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Limits bound one parse. Zero fields take the defaults below.
type Limits struct {
	MaxBytes int // default 1 MiB
	MaxDepth int // flow nesting, default 64
}

// Defaults.
const (
	DefaultMaxBytes = 1 << 20
	DefaultMaxDepth = 64
)

// Error is a problem with the YAML itself. Line is 1-based, 0 when the
// parser gave none.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// ErrTooLarge is wrapped by the error for input over Limits.MaxBytes.
var ErrTooLarge = errors.New("too large")

type tooLarge struct{ size, limit int }

func (e tooLarge) Error() string {
	return fmt.Sprintf("%d bytes is too large (the limit is %d)", e.size, e.limit)
}
func (e tooLarge) Unwrap() error { return ErrTooLarge }

// Parse parses data as a single YAML document and returns its body: nil
// for an empty document (only comments, or "---"). A second document is an
// error on its line.
func Parse(data []byte, lim Limits) (*yaml.Node, error) {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultMaxDepth
	}
	if len(data) > lim.MaxBytes {
		return nil, tooLarge{len(data), lim.MaxBytes}
	}
	if line := tooDeep(data, lim.MaxDepth); line > 0 {
		return nil, &Error{Line: line, Msg: fmt.Sprintf("nested more than %d levels deep", lim.MaxDepth)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err == io.EOF {
		return nil, nil
	} else if err != nil {
		return nil, convert(err, data)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		return nil, convert(err, data)
	default:
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, &Error{Line: line, Msg: "more than one YAML document"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	body := doc.Content[0]
	if body.Kind == yaml.ScalarNode && body.ShortTag() == "!!null" {
		return nil, nil // "---" alone, or an explicit null
	}
	return body, nil
}

var lineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// parserErrors are the messages of yaml.v3's parser (as opposed to its
// scanner). For these it prints a 0-based line, and none at all for the
// first line; scanner errors carry the right 1-based line.
var parserErrors = []string{
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found undefined tag handle",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
	"found incompatible YAML document",
}

// convert turns a yaml.v3 error into a one-line *Error with a 1-based
// line. A parser error at the end of the input (an unclosed [ or {) is
// placed on the last line rather than after it.
func convert(err error, data []byte) error {
	msg := strings.TrimPrefix(strings.Join(strings.Fields(err.Error()), " "), "yaml: ")
	line := 0
	if m := lineRE().FindStringSubmatch("yaml: " + msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	for _, p := range parserErrors {
		if strings.HasPrefix(msg, p) {
			line++ // 0-based, or absent for the first line
			last := bytes.Count(data, []byte("\n"))
			if len(data) > 0 && data[len(data)-1] != '\n' {
				last++
			}
			line = min(line, max(last, 1))
			break
		}
	}
	return &Error{Line: line, Msg: msg}
}

// tooDeep returns the line where flow collections ([ and {) nest deeper
// than max, or 0. It skips comments and quoted scalars, and counts only
// brackets that can open a flow collection, so a bracket inside a plain
// scalar (`note: a[1]`) is not counted; a rare miscount can only refuse a
// file whose text nests brackets max deep, never let a deep one through.
//
// Outside any flow collection, a token that starts with no indicator is a
// plain scalar running to ": ", " #" or the end of the line, and brackets
// in it are text (`note: A [[[`); a plain scalar cannot open a collection,
// so skipping them lets nothing deep through.
func tooDeep(data []byte, max int) int {
	s := flowScan{data: data, line: 1, boundary: true}
	for ; s.i < len(data); s.i++ {
		if s.step() > max {
			return s.line
		}
	}
	return 0
}

// flowScan is tooDeep's place in the text.
type flowScan struct {
	data     []byte
	i        int // the byte being read
	depth    int // flow collections open
	line     int
	boundary bool // at the start of a token: line start, after space , [ { :
	plain    bool // inside a block-context plain scalar
}

// indicators are the bytes that cannot start a plain scalar in block
// context (with the blanks).
const indicators = " \t\r[]{}#\"'-?:,|>!&*%@`"

// step reads data[i] (and, for a comment or a quoted scalar, the bytes up
// to its end) and returns the depth after it.
func (s *flowScan) step() int {
	c := s.data[s.i]
	if s.plain && c != '\n' {
		s.inPlain(c)
		return s.depth
	}
	switch {
	case c == '\n':
		s.line++
		s.boundary, s.plain = true, false
	case s.depth == 0 && s.boundary && !strings.ContainsRune(indicators, rune(c)):
		s.plain, s.boundary = true, false
	case c == '#' && s.boundary:
		s.skipComment()
	case (c == '"' || c == '\'') && s.boundary:
		s.skipQuoted(c)
		s.boundary = false
	case (c == '[' || c == '{') && (s.boundary || s.depth > 0):
		s.depth++
		s.boundary = true
	default:
		if (c == ']' || c == '}') && s.depth > 0 {
			s.depth--
		}
		s.boundary = c == ' ' || c == '\t' || c == ',' || c == ':' || c == '-' && s.boundary
	}
	return s.depth
}

// inPlain reads c inside a plain scalar, which ends at ": " or " #".
func (s *flowScan) inPlain(c byte) {
	next := byte('\n')
	if s.i+1 < len(s.data) {
		next = s.data[s.i+1]
	}
	switch {
	case c == ':' && (next == ' ' || next == '\t' || next == '\n' || next == '\r'):
		s.plain, s.boundary = false, true
	case (c == ' ' || c == '\t') && next == '#':
		s.plain, s.boundary = false, true
	}
}

// skipComment moves to the last byte before the comment's line end.
func (s *flowScan) skipComment() {
	for s.i < len(s.data) && s.data[s.i] != '\n' {
		s.i++
	}
	s.i--
}

// skipQuoted moves to the quote that closes the scalar opened at i (or
// past the end), counting the lines it spans: a backslash escapes the next
// byte in double quotes, and ” is a quote in single quotes.
func (s *flowScan) skipQuoted(q byte) {
	for s.i++; s.i < len(s.data); s.i++ {
		b := s.data[s.i]
		if b == '\n' {
			s.line++
		}
		if q == '"' && b == '\\' {
			s.i++
			continue
		}
		if b == q {
			if q == '\'' && s.i+1 < len(s.data) && s.data[s.i+1] == '\'' {
				s.i++
				continue
			}
			return
		}
	}
}
