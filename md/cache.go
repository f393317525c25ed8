package md

import "sync"

// Cache keeps what scopes rendered to, so that rendering a tree again that
// reuses some of the same *Scope values (a caller that keeps the nodes of
// unchanged inputs, such as files that did not change) copies their bytes
// and report records instead of walking them again. It is used only by
// renders without a budget, where nothing is dropped.
//
// A scope is looked up by its pointer and the context it is rendered in (the
// separator it inherits, whether it is inside XML, its depth, whether it
// starts a line), so a cached
// scope must not be changed after it was first rendered: nodes are values
// that are built, not edited, and a caller that reuses one promises that.
// Entries no render asked for since the previous render are dropped, so the
// cache holds about one prompt. A Cache is safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	// The maps are keyed by the scope alone, which hashes fast; the few
	// contexts one scope is rendered in are told apart within its slot.
	cur  map[*Scope]*slot
	prev map[*Scope]*slot
}

type slot struct {
	keys []cacheKey
	vals []*cached
}

func (s *slot) find(k cacheKey) *cached {
	for i := range s.keys {
		if s.keys[i] == k {
			return s.vals[i]
		}
	}
	return nil
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{cur: map[*Scope]*slot{}} }

// WithCache makes the renderer reuse and fill c (see [Cache]).
func WithCache(c *Cache) Option { return func(r *Renderer) { r.cache = c } }

type cacheKey struct {
	s     *Scope
	sep   string
	inXML bool
	depth int
	// lineStart is whether the scope starts a line: a list at its start
	// starts a new line when it does not.
	lineStart bool
}

type cached struct {
	text string
	recs []rec // the scope's own record first, then those inside it
	kept int   // prioritised scopes rendered, for sections around it
}

func (c *Cache) get(k cacheKey) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sl := c.cur[k.s]; sl != nil {
		if v := sl.find(k); v != nil {
			return v
		}
	}
	if sl := c.prev[k.s]; sl != nil {
		if v := sl.find(k); v != nil {
			if c.cur[k.s] == nil {
				c.cur[k.s] = sl // the slot moves on, with every variant of the scope
			} else {
				c.putLocked(k, v)
			}
			return v
		}
	}
	return nil
}

func (c *Cache) put(k cacheKey, v *cached) {
	c.mu.Lock()
	c.putLocked(k, v)
	c.mu.Unlock()
}

func (c *Cache) putLocked(k cacheKey, v *cached) {
	sl := c.cur[k.s]
	if sl == nil {
		sl = &slot{}
		c.cur[k.s] = sl
	}
	for i := range sl.keys {
		if sl.keys[i] == k {
			sl.vals[i] = v
			return
		}
	}
	sl.keys = append(sl.keys, k)
	sl.vals = append(sl.vals, v)
}

// sweep starts a new generation: what the last render did not use goes.
func (c *Cache) sweep() {
	c.mu.Lock()
	c.prev, c.cur = c.cur, make(map[*Scope]*slot, len(c.cur))
	c.mu.Unlock()
}
