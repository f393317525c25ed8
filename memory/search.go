package memory

import (
	"context"
	_ "embed"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hit is a memory a search found. Score is the store's relevance: higher is
// better; it compares hits of one search, not of two searches or stores.
// Matched are the words of the memory that matched the query, as written
// in it.
type Hit struct {
	Memory
	Score   float64  `json:"score"`
	Matched []string `json:"matched,omitempty"`

	seq int64 // the SQLite store's row, to find the hit's highlight
}

// SearchQuery asks a store for the memories most relevant to some text.
type SearchQuery struct {
	// Text is what to look for: any text at all. It is never read as
	// query syntax; see [Terms].
	Text string
	// User is the scope, as in [Query]: "" is the workspace-wide
	// memories, a user id that user's and the workspace-wide ones.
	User string
	// Limit is the most hits returned; 0 means [DefaultSearchLimit], and
	// it is capped at [MaxSearchLimit].
	Limit int
}

// Search limits.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 1000
	// MaxQueryTerms is the most words a search looks for: the first ones
	// of its text, stop words left out. More make a search slower and
	// rarely better.
	MaxQueryTerms = 32
	// maxTermBytes passes over longer "words" (a hash, a base64 blob):
	// they match nothing a person asks about.
	maxTermBytes = 64
)

// Searcher is a [Store] that ranks memories by relevance to a text. Only
// active memories are found. A text with no usable terms (see [Terms])
// finds nothing, without error.
type Searcher interface {
	Search(ctx context.Context, q SearchQuery) ([]Hit, error)
}

//go:embed texts/stopwords.txt
var stopText string

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(stopText) {
		m[w] = true
	}
	return m
}()

// Terms are the words a search looks for in text: runs of letters, digits
// and combining marks, lower-cased, each once, in order, without English
// stop words, single ASCII letters or words over 64 bytes, at most
// [MaxQueryTerms]. Everything else (quotes, operators such as NEAR or *,
// NUL, invalid UTF-8) only separates words, so no text is ever read as
// query syntax. Only as much of text is read as it takes to find the
// terms.
func Terms(text string) []string {
	return appendTerms(nil, text, MaxQueryTerms)
}

// appendTerms adds to terms the new terms of text, up to max in all.
func appendTerms(terms []string, text string, max int) []string {
	seen := make(map[string]bool, len(terms))
	for _, t := range terms {
		seen[t] = true
	}
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) }
	for i := 0; i < len(text) && len(terms) < max; {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError || !isWord(r) {
			i += n
			continue
		}
		j := i + n
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if r == utf8.RuneError || !isWord(r) {
				break
			}
			j += n
		}
		w := text[i:j]
		i = j
		if len(w) > maxTermBytes || (len(w) == 1 && w[0] > '9') {
			continue
		}
		w = strings.ToLower(w)
		if stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
	}
	return terms
}

// ftsQuery is the FTS5 expression that finds any of terms: each a quoted
// string (terms hold no quote), joined by OR.
func ftsQuery(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(t)
		b.WriteByte('"')
	}
	return b.String()
}

func (q SearchQuery) limit() int {
	switch {
	case q.Limit <= 0:
		return DefaultSearchLimit
	case q.Limit > MaxSearchLimit:
		return MaxSearchLimit
	}
	return q.Limit
}

// markOpen and markClose are what FTS5's highlight() puts around a matched
// word. Stored content may hold them too (Normalize keeps control
// characters); a hit whose content does gets no Matched words.
const markOpen, markClose = "\x01", "\x02"

// marked returns the words between markOpen and markClose in s.
func marked(s string) []string { return MarkedWords(s, markOpen, markClose) }

// MarkedWords returns the words a store's highlight put between open and
// close in s, each once (letter case aside), in order. Stores use it to
// fill [Hit.Matched].
func MarkedWords(s, open, close string) []string {
	var out []string
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return out
		}
		s = s[i+len(open):]
		j := strings.Index(s, close)
		if j < 0 {
			return out
		}
		w := s[:j]
		s = s[j+len(close):]
		if !containsFold(out, w) {
			out = append(out, w)
		}
	}
}

func containsFold(ws []string, w string) bool {
	for _, x := range ws {
		if strings.EqualFold(x, w) {
			return true
		}
	}
	return false
}
