package prompt

import (
	"fmt"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/workspace"
)

// structuredMemories renders the selected memories as one section per
// category, at the given heading level. Every memory is a scope, so a tight
// prompt budget can drop more of them (the least important first); the
// memories the memory budget already left out are reported and counted in a
// closing line, never dropped in silence.
func (st *state) structuredMemories(level int) md.Node {
	sel := st.memories
	if sel == nil {
		return nil
	}
	// The selection is kept while the store and the settings are unchanged,
	// and so is what it is built into.
	type memKey struct {
		sel   *memory.Selection
		level int
	}
	type memNodes struct {
		node    md.Node
		entries []md.Entry
	}
	m := st.nodes.get(memKey{sel, level}, func() any {
		saved := st.extraEntries
		st.extraEntries = nil
		n := st.buildMemories(sel, level)
		m := memNodes{n, st.extraEntries}
		st.extraEntries = saved
		return m
	}).(memNodes)
	if st.extraEntries == nil {
		// Shared with the cache: the full slice expression makes any
		// later append copy.
		st.extraEntries = m.entries[:len(m.entries):len(m.entries)]
	} else {
		st.extraEntries = append(st.extraEntries, m.entries...)
	}
	return m.node
}

func (st *state) buildMemories(sel *memory.Selection, level int) md.Node {
	for _, lo := range sel.LeftOut {
		reason := fmt.Sprintf("did not fit the memory budget of %d tokens", sel.Budget)
		switch lo.Reason {
		case memory.ReasonInactive:
			continue
		case memory.ReasonCurrentChat:
			reason = "came from the current chat"
		case memory.ReasonUnknownCategory:
			reason = fmt.Sprintf("category %q is not configured", lo.Memory.Category)
		}
		st.extraEntries = append(st.extraEntries, md.Entry{
			Name:    "memory/" + lo.Memory.ID,
			Tokens:  lo.Tokens,
			Status:  md.Dropped,
			Sources: []string{},
			Reason:  reason,
			Start:   -1, End: -1,
		})
	}
	leftOut := sel.OverBudget()
	rank := sel.Chosen
	var groups md.Group
	for _, g := range sel.Groups {
		var items []md.Node
		for _, m := range g.Memories {
			// A memory may come from a model's output, not through the
			// workspace's door: its control characters go here.
			content := m.Content
			if workspace.HasControls(content) {
				content = workspace.StripControls(content)
			}
			items = append(items, md.Named("memory/"+m.ID, md.Item(md.Text(content))).Prio(prioMemoryItems+max(min(rank, prioRange), 0)))
			rank--
		}
		groups = append(groups, md.Sec(level+1, g.Category.Label, md.UL(items...)))
	}
	if len(groups) == 0 {
		return nil
	}
	return md.Named("memories",
		md.Group(groups),
		md.If(leftOut > 0, md.Text(memory.LeftOutNotice(leftOut))),
	).OnDrop(func(n int) md.Node {
		return md.Text(memory.LeftOutNotice(n))
	})
}

// analystMemory is nao's memory block: "## Memory", a sentence on where the
// memories come from, then a section per category.
func (st *state) analystMemory() md.Node {
	mem := st.structuredMemories(2)
	if mem == nil && st.memoryText == nil {
		return nil
	}
	return md.Sec(2, "Memory",
		md.If(mem != nil, wording("memory-intro", nil)),
		st.memoryFile(3),
		mem,
	)
}
