package prompt

import "time"

// AgeLast makes the last result look d older, as if d had passed.
func (b *Builder) AgeLast(d time.Duration) {
	b.mu.Lock()
	last := b.recent[len(b.recent)-1]
	last.at = last.at.Add(-d)
	b.mu.Unlock()
}

// LastAt is when the last result was remembered.
func (b *Builder) LastAt() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recent[len(b.recent)-1].at
}

// HoldRefresh marks an age refresh as in flight (or not).
func (b *Builder) HoldRefresh(on bool) { b.refreshing.Store(on) }

// SameOptions is sameOptions, for tests.
func SameOptions(a, b Options) bool { return sameOptions(&a, &b) }

// NestHeadings is nestHeadings, for tests.
func NestHeadings(text string, top int) string { return nestHeadings(text, top) }
