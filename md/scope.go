package md

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

// Prio sets the scope's priority and returns the scope. Lower priorities are
// dropped first.
func (s *Scope) Prio(p int) *Scope {
	s.Priority, s.Prioritized = p, true
	return s
}

// Truncate marks the scope truncatable, with its own cap of maxTokens (0 for
// none), and returns the scope.
func (s *Scope) Truncate(maxTokens int) *Scope {
	s.Truncatable, s.MaxTokens = true, maxTokens
	return s
}

// From records the workspace files the scope was built from, for the report.
func (s *Scope) From(sources ...string) *Scope {
	s.Sources = append(s.Sources, sources...)
	return s
}

// Otherwise sets the node rendered in place of the scope when it is dropped.
func (s *Scope) Otherwise(n Node) *Scope {
	s.Instead = n
	return s
}

// OnDrop sets the notice rendered after the scope's children when some of the
// scopes inside it were dropped.
func (s *Scope) OnDrop(fn func(dropped int) Node) *Scope {
	s.Notice = fn
	return s
}
