package md

// RenderDropping renders n with exactly the named scopes dropped, for tests
// that check a budgeted render against the renders it chose between.
func RenderDropping(n Node, c Counter, drop map[string]bool) string {
	p := newPlan(n, nil)
	for i, si := range p.scopes {
		p.drop[i] = drop[si.s.Name]
	}
	text, _, _ := (&Renderer{counter: c}).pass(n, p)
	return text
}

// SetDebugTries sets a hook told of every cut the budget search renders.
func SetDebugTries(fn func(k int)) { debugTries = fn }

// SetStandMin sets the shortest text a sizing pass writes as a stand-in,
// returning a function that restores it.
func SetStandMin(n int) (restore func()) {
	old := standMin
	standMin = n
	return func() { standMin = old }
}

// SetDebugStands sets a hook told how many stand-ins each sizing pass wrote.
func SetDebugStands(fn func(n int)) { debugStands = fn }
