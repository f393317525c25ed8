package md

import "slices"

// Scope gives part of a tree a name, a priority and a policy for when the
// budget is short. It has no layout of its own: its children are joined by
// the separator of the block it sits in, as a [Group]'s are.
//
// A scope without a priority is never dropped. Over budget, scopes with a
// priority are dropped lowest priority first (on a tie, the later one first)
// until the prompt fits.
type Scope struct {
	Name     string
	Priority int
	// Prioritized is true once a priority was set: priority 0 is a priority.
	Prioritized bool
	// Truncatable scopes are cut at a line boundary, with a marker line,
	// rather than dropped whole.
	Truncatable bool
	// MaxTokens caps a truncatable scope on its own, budget or not. 0 means no
	// cap of its own.
	MaxTokens int
	Sources   []string
	// Instead is rendered in place of the scope when it is dropped.
	Instead Node
	// Notice, when set, is rendered after the scope's children whenever some
	// of the scopes inside it were dropped, with how many. It is not rendered
	// when nothing else of the scope is left.
	Notice   func(dropped int) Node
	Children []Node
}

// Named returns a scope called name around children.
func Named(name string, children ...Node) *Scope {
	return &Scope{Name: name, Children: children}
}

// The setters below return a new scope and leave s as it was: a scope
// that was rendered (and so may be in a [Cache], which keys on it) never
// changes, and a builder may share one scope between trees.

// with returns a copy of s changed by set.
func (s *Scope) with(set func(c *Scope)) *Scope {
	c := *s
	set(&c)
	return &c
}

// Prio returns the scope with priority p. Lower priorities are dropped
// first.
func (s *Scope) Prio(p int) *Scope {
	return s.with(func(c *Scope) { c.Priority, c.Prioritized = p, true })
}

// Truncate returns the scope marked truncatable, with its own cap of
// maxTokens (0 for none).
func (s *Scope) Truncate(maxTokens int) *Scope {
	return s.with(func(c *Scope) { c.Truncatable, c.MaxTokens = true, maxTokens })
}

// From returns the scope with the workspace files it was built from added,
// for the report.
func (s *Scope) From(sources ...string) *Scope {
	return s.with(func(c *Scope) { c.Sources = append(slices.Clip(s.Sources), sources...) })
}

// Otherwise returns the scope with n rendered in its place when it is
// dropped.
func (s *Scope) Otherwise(n Node) *Scope {
	return s.with(func(c *Scope) { c.Instead = n })
}

// OnDrop returns the scope with the notice rendered after its children
// when some of the scopes inside it were dropped.
func (s *Scope) OnDrop(fn func(dropped int) Node) *Scope {
	return s.with(func(c *Scope) { c.Notice = fn })
}
