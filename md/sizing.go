package md

// sizer renders a sizing pass (see passSized). At the top of the tree, the
// groups and the blocks that neither indent nor prefix their text, the
// renderer joins children through it (see renderer.sizer), and it writes each
// large kept scope there that the cache has whole as its stand-in: the
// scope's text less the middle between its first and last cut where counts
// add, which its record's count covers. Nothing around such a scope
// reshapes it, and the text around it is what a full pass writes, so the
// full text is the sizing text with every stand-in's middle put back, and
// counts as countStood says. Everything else is rendered by the renderer.
// A budget's first pass, and a long fill's, need the prompt's count, not its text: the
// largest scopes (a memory store's, a skills catalogue) are then counted
// from their cached counts without copying megabytes of text.
type sizer struct {
	r        *renderer
	stands   []stand
	standMin int // see tuning
}

func (sz *sizer) node(buf []byte, n Node) []byte {
	r := sz.r
	switch n := n.(type) {
	case Group:
		return r.join(buf, n, r.sep)
	case *Block:
		if n != nil && n.Prefix == "" && n.Indent == "" {
			return r.join(buf, n.Children, n.Sep)
		}
	case *Scope:
		if out, ok := sz.standIn(buf, n); ok {
			return out
		}
	}
	// Below the top, everything renders as in any pass.
	r.sizer = nil
	buf = r.renderNode(buf, n)
	r.sizer = sz
	return buf
}

// standIn writes s as its stand-in when the cache has it whole, as
// [Scope.render] would find it, with a text of at least standMin bytes
// that has two cuts where counts add; it reports whether it did. Its
// records are made as the renderer makes those of a scope found in the
// cache.
func (sz *sizer) standIn(buf []byte, s *Scope) ([]byte, bool) {
	r := sz.r
	p := r.plan
	if s == nil || r.depth != 0 || r.offPlan != 0 || !r.record || !r.count {
		return buf, false
	}
	add, ok := r.counter.(Additive)
	if !ok {
		return buf, false
	}
	idx := p.indexOf(s, r.next)
	if idx < 0 || p.isDropped(idx) || !p.uncut(idx) {
		return buf, false
	}
	ck := cacheKey{s: s, sep: r.sep, inXML: r.inXML, depth: r.depth, lineStart: len(buf) == 0 || buf[len(buf)-1] == '\n'}
	drops := p.dropsIn(idx)
	c := r.cache.get(ck, drops)
	if c == nil || drops == nil && len(c.recs) != p.scopes[idx].size+1 || c.recs[0].tokens < 0 || len(c.text) < sz.standMin {
		return buf, false
	}
	t := c.text
	first := firstCut(add, t)
	if first < 0 {
		return buf, false
	}
	last := lastCut(add, t)
	if last <= first {
		return buf, false
	}
	at := len(r.recs)
	if r.lean && len(c.recs) > 1 {
		r.blocks = append(r.blocks, block{at: at, base: idx, off: len(buf), recs: c.recs})
		r.recs = append(r.recs, c.recs[0])
		r.recs[at].inside = 0 // they are in the block
	} else {
		r.recs = append(r.recs, c.recs...)
	}
	for j := at; j < len(r.recs); j++ {
		r.recs[j].at += len(buf)
		r.recs[j].idx += int32(idx)
	}
	r.next = idx + p.scopes[idx].size + 1
	r.kept += c.kept
	r.dropped += c.dropped
	sz.stands = append(sz.stands, stand{rec: at, first: first, last: last})
	buf = append(buf, t[:first]...)
	return append(buf, t[last:]...), true
}

// block is a scope a lean pass found in the cache: its own record is at
// index at of the pass's records, the records inside it are recs[1:] of
// the cache's (plan indexes from base, offsets from off).
type block struct {
	at, base, off int
	recs          []rec
}

// expand returns a lean pass's records with every block's put back in
// place, as a full pass would have made them.
func expand(recs []rec, blocks []block) []rec {
	if len(blocks) == 0 {
		return recs
	}
	n := len(recs)
	for _, b := range blocks {
		n += len(b.recs) - 1
	}
	out := make([]rec, 0, n)
	// pos[i] is where recs[i] lands in out, and pos[len(recs)] is len(out):
	// a record's count of the records inside it is made again from them,
	// as the blocks inside it bring theirs.
	pos := make([]int32, len(recs)+1)
	for i, rc := range recs {
		pos[i] = int32(len(out))
		out = append(out, rc)
		if len(blocks) > 0 && blocks[0].at == i {
			b := blocks[0]
			blocks = blocks[1:]
			for _, inner := range b.recs[1:] {
				inner.at += b.off
				if b.base < 0 {
					inner.idx = -1 // a pass without a plan (see plainPass)
				} else {
					inner.idx += int32(b.base)
				}
				// A section around the block that went took the block's
				// scope with it (see Section.render), and so everything
				// inside it that rendered text.
				inner.gone = inner.gone || rc.gone && inner.text != ""
				out = append(out, inner)
			}
		}
	}
	pos[len(recs)] = int32(len(out))
	for i, rc := range recs {
		if rc.inside > 0 {
			out[pos[i]].inside = pos[i+1+int(rc.inside)] - pos[i] - 1
		} else if pos[i+1]-pos[i] > 1 { // a block's own record
			out[pos[i]].inside = pos[i+1] - pos[i] - 1
		}
	}
	return out
}
