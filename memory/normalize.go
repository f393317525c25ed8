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

// Normalize returns content the way it is stored: trimmed, every run of
// white space collapsed to one space, and ending with a full stop unless it
// already ends with ".", "!" or "?". Empty content is rejected with
// [ErrEmptyContent], content over [MaxContentBytes] with a
// *[ContentTooLongError].
func Normalize(content string) (string, error) {
	// A cheap guard first, so a huge input is refused before it is copied.
	if len(content) > 4*MaxContentBytes {
		return "", &ContentTooLongError{Size: len(content), Limit: MaxContentBytes}
	}
	s := strings.Join(strings.Fields(content), " ")
	if s == "" {
		return "", ErrEmptyContent
	}
	switch s[len(s)-1] {
	case '.', '!', '?':
	default:
		s += "."
	}
	if len(s) > MaxContentBytes {
		return "", &ContentTooLongError{Size: len(s), Limit: MaxContentBytes}
	}
	return s, nil
}
