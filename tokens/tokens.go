// Package tokens counts the tokens a text costs a language model.
//
// It offers three counters behind one interface, [Counter]:
//
//   - "o200k_base" and "cl100k_base": exact counts for OpenAI's byte-pair
//     encodings. The vocabularies, taken from github.com/tiktoken-go/tokenizer
//     when they were generated, are compiled into the binary as hash tables
//     that are read in place, so counting works offline and the first count
//     costs no set-up beyond a fraction of a millisecond.
//   - "chars4": a fast estimate, one token per four characters, for when an
//     exact count is not worth its price.
//
// Exact counts equal tiktoken's encode_ordinary: text that looks like a
// special token, such as "<|endoftext|>", is counted as the ordinary text it
// is. A prompt is text, and a special token cannot be typed into one.
//
// Counting never fails and never panics. Invalid UTF-8 is first replaced
// with U+FFFD, one per run of bad bytes, the same repair
// workspace.Normalize makes, so a string counts the same before and after
// a workspace read.
//
// [Get] and [ForModel] return counters that remember counts by content (see
// [Cached]): rendering a prompt again whose text did not change does not
// tokenize it again. The counters are safe for concurrent use.
package tokens

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Counter counts the tokens in a text. Every counter this package returns
// also has a Name method that returns its encoding name.
type Counter interface {
	Count(text string) int
}

// Encoding names accepted by [Get].
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
	Chars4     = "chars4"
)

// Default is the encoding loom counts with when nothing says otherwise: the
// one every current OpenAI model uses.
const Default = O200kBase

// Names lists the encodings [Get] accepts, in a fixed order.
func Names() []string { return []string{O200kBase, Cl100kBase, Chars4} }

// UnknownEncodingError is returned by [Get] for a name it does not know.
type UnknownEncodingError struct{ Name string }

func (e *UnknownEncodingError) Error() string {
	return fmt.Sprintf("unknown encoding %q (valid: %s)", e.Name, strings.Join(Names(), ", "))
}

// Get returns the counter for an encoding name. The exact encodings come
// back cached and shared by the whole process; "chars4" is not cached,
// because looking a count up would cost more than computing it.
func Get(encoding string) (Counter, error) {
	switch encoding {
	case O200kBase:
		return sharedO200k, nil
	case Cl100kBase:
		return sharedCl100k, nil
	case Chars4:
		return Estimate{}, nil
	}
	return nil, &UnknownEncodingError{Name: encoding}
}

// Uncached returns a counter for an encoding that tokenizes on every call,
// without the content cache of [Get]. (It still remembers the merges of
// long pieces, such as runs of spaces, as every exact counter does.) It is
// meant for benchmarks and for callers with their own cache.
func Uncached(encoding string) (Counter, error) {
	switch encoding {
	case O200kBase:
		return o200k, nil
	case Cl100kBase:
		return cl100k, nil
	case Chars4:
		return Estimate{}, nil
	}
	return nil, &UnknownEncodingError{Name: encoding}
}

// NameOf returns the encoding name of a counter from this package, or ""
// for a counter that has no Name method.
func NameOf(c Counter) string {
	if n, ok := c.(interface{ Name() string }); ok {
		return n.Name()
	}
	return ""
}

// valid returns text with each run of invalid UTF-8 replaced by U+FFFD.
// Valid text, the usual case, is returned as is without allocating.
func valid(text string) string {
	if utf8.ValidString(text) {
		return text
	}
	return strings.ToValidUTF8(text, "\uFFFD")
}
