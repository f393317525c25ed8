package prompt

import "sync"

// nodeCache keeps the nodes built from inputs that did not change since the
// last render (a bootstrap file, a skill entry, the memory selection), keyed
// by what they were built from. Handing the renderer the same *md.Scope
// again lets its md.Cache copy the rendered bytes and their counts instead of
// rendering them again, so a render after one file changed re-renders what
// depends on that file and reuses the rest. Keys not used by a render are
// dropped after the next one.
type nodeCache struct {
	mu   sync.Mutex
	cur  map[any]any
	prev map[any]any
}

func newNodeCache() *nodeCache { return &nodeCache{cur: map[any]any{}} }

// get returns the node cached under key, or builds and caches it. A key
// must capture everything the node is built from.
func (c *nodeCache) get(key any, build func() any) any {
	if c == nil {
		return build()
	}
	c.mu.Lock()
	n, ok := c.cur[key]
	if !ok {
		if n, ok = c.prev[key]; ok {
			c.cur[key] = n
		}
	}
	c.mu.Unlock()
	if ok {
		return n
	}
	n = build()
	c.mu.Lock()
	c.cur[key] = n
	c.mu.Unlock()
	return n
}

// sweep starts a new generation after a render.
func (c *nodeCache) sweep() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.prev, c.cur = c.cur, make(map[any]any, len(c.cur))
	c.mu.Unlock()
}
