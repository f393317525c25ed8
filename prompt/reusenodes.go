package prompt

import "sync"

// nodeCache keeps the nodes built from inputs that did not change since the
// last render (a bootstrap file, a skill entry, the memory selection), keyed
// by what they were built from. Handing the renderer the same *md.Scope
// again lets its md.Cache copy the rendered bytes and their counts instead of
// rendering them again, so a render after one file changed re-renders what
// depends on that file and reuses the rest. Keys not used by a render are
// dropped after the next one.
//
// Each entry notes the last render that used it, so a render that uses what
// it found changes nothing in the map; entries two renders old go when the
// map has grown past twice what a render uses.
type nodeCache struct {
	mu   sync.Mutex
	m    map[any]*nodeEntry
	gen  uint64
	used int // entries the current render used
	last int // entries the last render used
}

type nodeEntry struct {
	n   any
	gen uint64
}

func newNodeCache() *nodeCache { return &nodeCache{m: map[any]*nodeEntry{}, gen: 1} }

// get returns the node cached under key, or builds and caches it. A key
// must capture everything the node is built from.
func (c *nodeCache) get(key any, build func() any) any {
	if c == nil {
		return build()
	}
	c.mu.Lock()
	e, ok := c.m[key]
	if ok && e.gen+1 >= c.gen {
		if e.gen != c.gen {
			e.gen = c.gen
			c.used++
		}
		c.mu.Unlock()
		return e.n
	}
	c.mu.Unlock()
	n := build()
	c.mu.Lock()
	if e, ok := c.m[key]; ok && e.gen == c.gen {
		n = e.n // another goroutine built it first
	} else {
		c.m[key] = &nodeEntry{n: n, gen: c.gen}
		c.used++
	}
	c.mu.Unlock()
	return n
}

// sweep starts a new generation after a render.
func (c *nodeCache) sweep() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.used = c.used, 0
	c.gen++
	if len(c.m) > 2*c.last+64 {
		for k, e := range c.m {
			if e.gen+1 < c.gen {
				delete(c.m, k)
			}
		}
	}
}
