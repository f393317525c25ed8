// Package discard is an example for md's TestDiscardedSetterIsFound: each
// line ending "// discarded" throws away what an md setter returned.
package discard

import (
	"bytes"

	"github.com/loomctx/loom/md"
)

func bad(s *md.Scope, x *md.XMLElement, m *md.XMLMemo) {
	s.Prio(1)                                          // discarded
	s.Truncate(100)                                    // discarded
	s.From("MEMORY.md")                                // discarded
	(s.Otherwise(md.Text("gone")))                     // discarded
	defer s.OnDrop(nil)                                // discarded
	go x.Memo(m)                                       // discarded
	_ = s.Prio(2)                                      // discarded
	md.Named("n", md.Text("t")).Prio(3).From("a", "b") // discarded
}

func good(s *md.Scope, x *md.XMLElement, m *md.XMLMemo, b *bytes.Buffer) (*md.Scope, md.Node) {
	s = s.Prio(1).Truncate(100)
	b.Truncate(0)
	keep := []md.Node{s.From("MEMORY.md"), x.Memo(m)}
	use(s.OnDrop(nil))
	return s.Otherwise(md.Text("gone")), keep[0]
}

func use(md.Node) {}
