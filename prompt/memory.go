package prompt

import (
	"fmt"
	"strings"

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

// nestHeadings moves the Markdown headings of text down so that the
// shallowest is at level top (never past 6), keeping their order and
// relative depth; a setext heading (a line underlined with === or ---)
// becomes an ATX one. Lines in fenced code blocks are left alone. Text
// whose headings are already deep enough is returned as it is.
func nestHeadings(text string, top int) string {
	lines := strings.Split(text, "\n")
	type heading struct{ line, level, end int } // end: the underline's index, or -1
	var hs []heading
	fence := ""
	for i := 0; i < len(lines); i++ {
		t := strings.TrimLeft(lines[i], " ")
		if len(lines[i])-len(t) > 3 {
			continue // indented code
		}
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if f := fenceOf(t); f != "" {
			fence = f
			continue
		}
		if n := atxLevel(t); n > 0 {
			hs = append(hs, heading{i, n, -1})
			continue
		}
		if t != "" && i+1 < len(lines) && !startsBlock(t) {
			u := strings.TrimSpace(lines[i+1])
			if len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) <= 3 && u != "" && (strings.Trim(u, "=") == "" || strings.Trim(u, "-") == "") {
				n := 1
				if u[0] == '-' {
					n = 2
				}
				hs = append(hs, heading{i, n, i + 1})
				i++
			}
		}
	}
	if len(hs) == 0 {
		return text
	}
	least := 6
	for _, h := range hs {
		least = min(least, h.level)
	}
	shift := top - least
	if shift <= 0 {
		return text
	}
	drop := map[int]bool{}
	for _, h := range hs {
		t := strings.TrimSpace(lines[h.line])
		if h.end < 0 {
			t = strings.TrimSpace(strings.TrimLeft(t, "#"))
		} else {
			drop[h.end] = true
		}
		lines[h.line] = strings.Repeat("#", min(h.level+shift, 6)) + " " + t
	}
	out := lines[:0]
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// atxLevel is the level of an ATX heading line ("## x"), 0 if t is not one.
func atxLevel(t string) int {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(t) && t[n] != ' ' && t[n] != '\t') {
		return 0
	}
	return n
}

// fenceOf is the fence a line opens (``` or ~~~, as long as written), or "".
func fenceOf(t string) string {
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// startsBlock reports whether a line is a list item, quote, table row or
// rule, which an underline below does not make a heading.
func startsBlock(t string) bool {
	switch {
	case strings.HasPrefix(t, "- "), strings.HasPrefix(t, "* "), strings.HasPrefix(t, "+ "),
		strings.HasPrefix(t, ">"), strings.HasPrefix(t, "|"), strings.Trim(t, "-*_ ") == "":
		return true
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	return i > 0 && i < len(t) && (t[i] == '.' || t[i] == ')')
}
