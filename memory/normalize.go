package memory

import (
	"errors"
	"fmt"
	"strings"
)

// MaxContentBytes is the longest content a memory may have, counted after
// normalisation. A memory is a sentence or a short paragraph; anything
// longer belongs in a file.
const MaxContentBytes = 64 << 10

// ErrEmptyContent is returned for content that is empty after trimming.
var ErrEmptyContent = errors.New("memory content is empty")

// ContentTooLongError is returned for content over [MaxContentBytes].
type ContentTooLongError struct {
	Size  int // bytes after normalisation
	Limit int
}

func (e *ContentTooLongError) Error() string {
	return fmt.Sprintf("memory content is %d bytes; the limit is %d", e.Size, e.Limit)
}

// Clean returns content the way a store keeps it: trimmed, and every run
// of white space collapsed to one space, since a memory is one item of a
// list in the prompt; nothing is added, so what a person typed (`loom
// memory add`, the API, MCP's remember, an import) is kept as typed.
// Empty content is rejected with [ErrEmptyContent], content over
// [MaxContentBytes] with a *[ContentTooLongError].
func Clean(content string) (string, error) {
	// A cheap guard first, so a huge input is refused before it is copied.
	if len(content) > 4*MaxContentBytes {
		return "", &ContentTooLongError{Size: len(content), Limit: MaxContentBytes}
	}
	s := strings.Join(strings.Fields(content), " ")
	if s == "" {
		return "", ErrEmptyContent
	}
	if len(s) > MaxContentBytes {
		return "", &ContentTooLongError{Size: len(s), Limit: MaxContentBytes}
	}
	return s, nil
}

// Normalize is [Clean] for what a model extracted from a conversation: it
// also ends the content with a full stop unless it ends with ".", "!" or
// "?", so that the same fact said with and without one is found a
// duplicate. It fails as Clean does, the full stop counted in the limit.
func Normalize(content string) (string, error) {
	s, err := Clean(content)
	if err != nil {
		return "", err
	}
	switch s[len(s)-1] {
	case '.', '!', '?':
		return s, nil
	}
	if len(s)+1 > MaxContentBytes {
		return "", &ContentTooLongError{Size: len(s) + 1, Limit: MaxContentBytes}
	}
	return s + ".", nil
}
