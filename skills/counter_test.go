package skills

import "strings"

// wordCounter counts words: enough to drive the budget in tests without
// depending on a tokenizer.
type wordCounter struct{}

func (wordCounter) Count(s string) int { return len(strings.Fields(s)) }
