package inspector

import (
	"strings"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/prompt"
)

// DiffView is the cache diff: the first top-level section that differs
// between a pinned render and the current one, side by side.
type DiffView struct {
	Pin     Pin
	Error   string
	Same    bool
	Section string // the first section that differs
	Part    string // the first part inside it whose cost or status differs, if any
	Why     string // added, removed, changed
	// Offset is the first byte where the prompts differ: a provider's
	// prompt cache can reuse everything before it.
	Offset      int
	PrefixTotal int
	Rows        []DiffRow
	Clipped     bool
}

// DiffRow is one line of the side-by-side diff.
type DiffRow struct {
	Left, Right string
	Kind        string // same, del, add, change
}

// maxDiffLines bounds the lines diffed on each side.
const maxDiffLines = 1000

func compare(old, cur *prompt.Result) *DiffView {
	dv := &DiffView{PrefixTotal: len(cur.Prompt)}
	if old.Prompt == cur.Prompt {
		dv.Same = true
		dv.Offset = len(cur.Prompt)
		return dv
	}
	dv.Offset = commonPrefix(old.Prompt, cur.Prompt)
	a, b := topLevel(old), topLevel(cur)
	n := max(len(a), len(b))
	for i := 0; i < n; i++ {
		switch {
		case i >= len(a):
			dv.Section, dv.Why = b[i].name, "added"
			dv.Rows = lineDiff("", b[i].text, &dv.Clipped)
			return dv
		case i >= len(b):
			dv.Section, dv.Why = a[i].name, "removed"
			dv.Rows = lineDiff(a[i].text, "", &dv.Clipped)
			return dv
		case a[i].name != b[i].name:
			dv.Section, dv.Why = b[i].name, "a different section is in this place (was "+a[i].name+")"
			dv.Rows = lineDiff(a[i].text, b[i].text, &dv.Clipped)
			return dv
		case a[i].text != b[i].text:
			dv.Section, dv.Why = b[i].name, "changed"
			dv.Part = changedPart(a[i].parts, b[i].parts)
			dv.Rows = lineDiff(a[i].text, b[i].text, &dv.Clipped)
			return dv
		}
	}
	// The sections agree; the difference is in text between them.
	dv.Section, dv.Why = "(between sections)", "changed"
	dv.Rows = lineDiff(old.Prompt, cur.Prompt, &dv.Clipped)
	return dv
}

type named struct {
	name, text string
	parts      []md.Entry
}

// changedPart names the first part whose status or cost differs, or that
// only one render has.
func changedPart(a, b []md.Entry) string {
	for i := 0; i < max(len(a), len(b)); i++ {
		switch {
		case i >= len(a):
			return b[i].Name
		case i >= len(b):
			return a[i].Name
		case a[i].Name != b[i].Name || a[i].Tokens != b[i].Tokens || a[i].Status != b[i].Status:
			return b[i].Name
		}
	}
	return ""
}

// topLevel lists the sections that are in the prompt, in order.
func topLevel(res *prompt.Result) []named {
	var out []named
	for _, s := range sections(res) {
		if s.Status != md.Dropped && s.Start >= 0 {
			out = append(out, named{s.Name, s.Text, s.Parts})
		}
	}
	return out
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// lineDiff aligns the lines of a and b by their longest common
// subsequence and pairs deletions with additions into changed rows.
func lineDiff(a, b string, clipped *bool) []DiffRow {
	al, bl := splitLines(a), splitLines(b)
	if len(al) > maxDiffLines {
		al, *clipped = al[:maxDiffLines], true
	}
	if len(bl) > maxDiffLines {
		bl, *clipped = bl[:maxDiffLines], true
	}
	// Trim the common head and tail, then LCS the middle.
	head := 0
	for head < len(al) && head < len(bl) && al[head] == bl[head] {
		head++
	}
	tail := 0
	for tail < len(al)-head && tail < len(bl)-head && al[len(al)-1-tail] == bl[len(bl)-1-tail] {
		tail++
	}
	var rows []DiffRow
	for _, l := range al[:head] {
		rows = append(rows, DiffRow{l, l, "same"})
	}
	ma, mb := al[head:len(al)-tail], bl[head:len(bl)-tail]
	lcs := make([][]int32, len(ma)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(mb)+1)
	}
	for i := len(ma) - 1; i >= 0; i-- {
		for j := len(mb) - 1; j >= 0; j-- {
			if ma[i] == mb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var dels, adds []string
	flush := func() {
		n := max(len(dels), len(adds))
		for k := 0; k < n; k++ {
			r := DiffRow{Kind: "change"}
			if k < len(dels) {
				r.Left = dels[k]
			} else {
				r.Kind = "add"
			}
			if k < len(adds) {
				r.Right = adds[k]
			} else {
				r.Kind = "del"
			}
			rows = append(rows, r)
		}
		dels, adds = dels[:0], adds[:0]
	}
	i, j := 0, 0
	for i < len(ma) || j < len(mb) {
		switch {
		case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
			flush()
			rows = append(rows, DiffRow{ma[i], mb[j], "same"})
			i++
			j++
		case j < len(mb) && (i == len(ma) || lcs[i][j+1] >= lcs[i+1][j]):
			adds = append(adds, mb[j])
			j++
		default:
			dels = append(dels, ma[i])
			i++
		}
	}
	flush()
	for _, l := range al[len(al)-tail:] {
		rows = append(rows, DiffRow{l, l, "same"})
	}
	return rows
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
