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
	c.each(fm, func(kind, what string) bool {
		out = append(out, kind+what)
		return true
	})
	return out
}

// same reports whether c.missing(fm) would be missing, without making it:
// a warm load asks it of every skill it already has.
func (c *checker) same(fm *Frontmatter, missing []string) bool {
	i := 0
	return c.each(fm, func(kind, what string) bool {
		if i == len(missing) || len(missing[i]) != len(kind)+len(what) || !strings.HasPrefix(missing[i], kind) || missing[i][len(kind):] != what {
			return false
		}
		i++
		return true
	}) && i == len(missing)
}

// each calls fn with what fm needs that is missing, in order, as a kind
// ("CLI: ", "ENV: ", "OS: ") and a name, until fn returns false; it
// reports whether fn never did.
func (c *checker) each(fm *Frontmatter, fn func(kind, what string) bool) bool {
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
			if !ok && !fn("CLI: ", b) {
				c.mu.Unlock()
				return false
			}
		}
		c.mu.Unlock()
	}
	for _, e := range fm.Requires.Env {
		if c.getenv(e) == "" && !fn("ENV: ", e) {
			return false
		}
	}
	if len(fm.OS) > 0 {
		for _, o := range fm.OS {
			if strings.EqualFold(o, c.goos) {
				return true
			}
		}
		return fn("OS: ", strings.Join(fm.OS, " or "))
	}
	return true
}
