package skills

import (
	"strings"
	"sync"
)

// checker decides availability, remembering answers within one load so
// that a thousand skills needing curl cost one PATH search.
type checker struct {
	mu       sync.Mutex // skills are checked from several goroutines
	lookPath func(string) (string, error)
	getenv   func(string) string
	goos     string
	bins     map[string]bool
}

func (c *checker) missing(fm *Frontmatter) []string {
	var out []string
	if len(fm.Requires.Bins) > 0 {
		// Only the remembered PATH searches are shared.
		c.mu.Lock()
		for _, b := range fm.Requires.Bins {
			ok, seen := c.bins[b]
			if !seen {
				_, err := c.lookPath(b)
				ok = err == nil
				c.bins[b] = ok
			}
			if !ok {
				out = append(out, "CLI: "+b)
			}
		}
		c.mu.Unlock()
	}
	for _, e := range fm.Requires.Env {
		if c.getenv(e) == "" {
			out = append(out, "ENV: "+e)
		}
	}
	if len(fm.OS) > 0 {
		match := false
		for _, o := range fm.OS {
			if strings.EqualFold(o, c.goos) {
				match = true
				break
			}
		}
		if !match {
			out = append(out, "OS: "+strings.Join(fm.OS, " or "))
		}
	}
	return out
}
