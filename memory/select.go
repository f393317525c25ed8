package memory

import (
	_ "embed"
	"slices"
	"strconv"
	"strings"
)

// DefaultBudget is the token budget for structured memories when loom.yaml
// and the command line name none.
const DefaultBudget = 1000

// Counter counts tokens. md.Counter and tokens.Counter satisfy it.
type Counter interface {
	Count(text string) int
}

// LowerBounder is a [Counter] that can cheaply bound a count from below.
// [Select] uses the bound to pass over memories that cannot fit without
// tokenizing them. The bound must never exceed Count.
type LowerBounder interface {
	LowerBound(text string) int
}

// Reason says why a memory was left out of a [Selection].
type Reason string

// Reasons a memory is left out.
const (
	// ReasonBudget: its line did not fit in what was left of the budget.
	ReasonBudget Reason = "over budget"
	// ReasonCurrentChat: it came from the chat the prompt is for.
	ReasonCurrentChat Reason = "current chat"
	// ReasonUnknownCategory: its category is not configured.
	ReasonUnknownCategory Reason = "unknown category"
	// ReasonInactive: it was superseded or forgotten.
	ReasonInactive Reason = "superseded or forgotten"
)

// SelectOptions adjust [Select].
type SelectOptions struct {
	// ExcludeChat, when set, leaves out the memories that came from this
	// chat, as nao does: the chat already holds them.
	ExcludeChat string
	// LowerBound overrides the cheap lower bound on a line's token count.
	// When nil, the counter's own LowerBound method is used if it has one,
	// then [BPELowerBound] for the o200k_base and cl100k_base encodings;
	// for any other counter every candidate line is counted.
	LowerBound func(line string) int
}

// Group is one category's chosen memories, newest first.
type Group struct {
	Category Category `json:"category"`
	Memories []Memory `json:"memories"`
}

// LeftOut is a memory that did not enter the prompt, and why. Memory
// points into the slice given to [Select]; a large store leaves most of its
// memories out, and copying each would cost more than the selection.
type LeftOut struct {
	Memory *Memory `json:"memory"`
	Reason Reason  `json:"reason"`
	// Tokens is the line's exact cost when it was counted, else 0.
	Tokens int `json:"tokens,omitempty"`
}

// Selection is what [Select] chose: data for the prompt package to render
// and for the report to list.
type Selection struct {
	// Groups holds the chosen memories by category, in priority order.
	// Categories with nothing chosen are omitted.
	Groups []Group `json:"groups"`
	// LeftOut lists every memory not chosen, in the order they were
	// considered.
	LeftOut []LeftOut `json:"left_out"`
	// Budget is the token budget the selection was made within.
	Budget int `json:"budget"`
	// Tokens is the total cost of the chosen lines; it is at most Budget.
	Tokens int `json:"tokens"`
	// Chosen is the number of memories chosen.
	Chosen int `json:"chosen"`
	// Counted is how many lines were tokenized exactly. The rest were
	// passed over on their lower bound alone.
	Counted int `json:"counted"`
}

// OverBudget is the number of memories left out for length, the number
// [LeftOutNotice] reports.
func (s *Selection) OverBudget() int {
	n := 0
	for _, l := range s.LeftOut {
		if l.Reason == ReasonBudget {
			n++
		}
	}
	return n
}

// Line is how a memory is rendered in the prompt: a Markdown bullet. Its
// token count, bullet included, is what the memory costs.
func Line(m Memory) string { return "- " + m.Content }

// Select chooses which memories enter a prompt within budget tokens.
//
// Candidates are ordered by category priority (the order of cats), then
// newest first, and taken greedy first-fit: a line that does not fit in
// what is left is passed over, and a shorter one after it can still fit. A
// line that lands exactly on the budget fits. Superseded and forgotten
// memories, memories of opts.ExcludeChat and memories of a category not in
// cats are left out too, each with its reason.
//
// Only lines that could fit are tokenized: a line whose lower bound
// already exceeds what is left is passed over uncounted, so from a large
// store little more than the chosen lines is counted.
func Select(memories []Memory, cats []Category, budget int, counter Counter, opts SelectOptions) Selection {
	budget = max(budget, 0)
	sel := Selection{Budget: budget}
	prio := make(map[string]int, len(cats))
	for i, c := range cats {
		if _, dup := prio[c.Name]; !dup {
			prio[c.Name] = i
		}
	}
	type cand struct {
		prio    int
		created int64
		idx     int
	}
	cands := make([]cand, len(memories))
	for i, m := range memories {
		p, ok := prio[m.Category]
		if !ok {
			p = len(cats)
		}
		cands[i] = cand{prio: p, created: m.CreatedAt.UnixNano(), idx: i}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case a.prio != b.prio:
			return a.prio - b.prio
		case a.created != b.created:
			if a.created > b.created {
				return -1
			}
			return 1
		}
		return a.idx - b.idx
	})

	bound := opts.lowerBound(counter)
	chosen := make([][]Memory, len(cats))
	remaining := budget
	sel.LeftOut = make([]LeftOut, 0, len(memories))
	for _, c := range cands {
		m := &memories[c.idx]
		switch {
		case m.SupersededBy != "" || m.Forgotten:
			sel.LeftOut = append(sel.LeftOut, LeftOut{Memory: m, Reason: ReasonInactive})
			continue
		case opts.ExcludeChat != "" && m.Chat == opts.ExcludeChat:
			sel.LeftOut = append(sel.LeftOut, LeftOut{Memory: m, Reason: ReasonCurrentChat})
			continue
		case c.prio == len(cats):
			sel.LeftOut = append(sel.LeftOut, LeftOut{Memory: m, Reason: ReasonUnknownCategory})
			continue
		}
		if bound != nil && bound(m.Content, remaining) > remaining {
			sel.LeftOut = append(sel.LeftOut, LeftOut{Memory: m, Reason: ReasonBudget})
			continue
		}
		n := counter.Count(Line(*m))
		sel.Counted++
		if n > remaining {
			sel.LeftOut = append(sel.LeftOut, LeftOut{Memory: m, Reason: ReasonBudget, Tokens: n})
			continue
		}
		remaining -= n
		sel.Tokens += n
		sel.Chosen++
		chosen[c.prio] = append(chosen[c.prio], *m)
	}
	if len(sel.LeftOut) == 0 {
		sel.LeftOut = nil
	}
	for i, ms := range chosen {
		if len(ms) > 0 {
			sel.Groups = append(sel.Groups, Group{Category: cats[i], Memories: ms})
		}
	}
	return sel
}

// lowerBound returns a lower bound on the cost of a memory's line, given
// its content, or nil when there is none. The bound may stop counting once
// it passes limit.
func (o SelectOptions) lowerBound(c Counter) func(content string, limit int) int {
	lineBound := func(f func(string) int) func(string, int) int {
		return func(content string, _ int) int { return f("- " + content) }
	}
	if o.LowerBound != nil {
		return lineBound(o.LowerBound)
	}
	if lb, ok := c.(LowerBounder); ok {
		return lineBound(lb.LowerBound)
	}
	if n, ok := c.(interface{ Name() string }); ok {
		switch n.Name() {
		case "o200k_base", "cl100k_base":
			// "- " adds the piece "-"; the space keeps it apart from the
			// content's first word. No line is built.
			return func(content string, limit int) int { return 1 + bpeBound(content, limit-1) }
		}
	}
	return nil
}

// BPELowerBound is a lower bound on the o200k_base and cl100k_base token
// count of text, computed without the vocabulary.
//
// Both encodings first split text into pieces with a pattern, and each
// piece becomes at least one token. No piece joins two words (runs of
// non-space characters): space can only open a piece. Within a plain ASCII
// word the pieces are fixed too: each run of letters is a piece (it may
// take one punctuation character just before it), each run of k digits is
// ceil(k/3) pieces, and each other run of punctuation is a piece. A word
// with an apostrophe or a non-ASCII byte, whose splitting depends on
// contractions and Unicode classes, is counted as one piece.
func BPELowerBound(text string) int { return bpeBound(text, len(text)) }

// bpeBound is BPELowerBound that may stop early: once the bound passes
// limit it returns a value above limit, which is all Select needs to know.
func bpeBound(text string, limit int) int {
	n := 0
	for i := 0; i < len(text) && n <= limit; {
		if class[text[i]] == space {
			i++
			continue
		}
		j := i
		for j < len(text) && class[text[j]] != space {
			j++
		}
		n += wordPieces(text[i:j])
		i = j
	}
	return n
}

// Byte classes for bpeBound.
const (
	punct  = iota // ASCII punctuation and controls, but the apostrophe
	space         // ASCII white space
	letter        // ASCII letter
	digit         // ASCII digit
	other         // apostrophe or any byte of a non-ASCII character
)

var class = func() (c [256]uint8) {
	for b := range 256 {
		switch {
		case b >= 0x80 || b == '\'':
			c[b] = other
		case b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f':
			c[b] = space
		case b|0x20 >= 'a' && b|0x20 <= 'z':
			c[b] = letter
		case b >= '0' && b <= '9':
			c[b] = digit
		}
	}
	return c
}()

// wordPieces bounds the pieces of one word from below; see BPELowerBound.
func wordPieces(w string) int {
	n := 0
	for i := 0; i < len(w); {
		k := class[w[i]]
		j := i + 1
		switch k {
		case other:
			return 1 // the word's splitting depends on Unicode classes
		case letter, digit:
			for j < len(w) && class[w[j]] == k {
				j++
			}
			if k == letter {
				n++
			} else {
				n += (j - i + 2) / 3
			}
		default:
			for j < len(w) && class[w[j]] == punct {
				j++
			}
			// One punctuation character may open the letters after it.
			if j-i > 1 || j == len(w) || class[w[j]] != letter {
				n++
			}
		}
		i = j
	}
	return n
}

//go:embed texts/left-out.txt
var leftOutText string

// LeftOutNotice is the sentence the prompt carries when n memories were
// left out for length, so the model knows its memory is incomplete. It is
// "" when n is 0.
func LeftOutNotice(n int) string {
	if n <= 0 {
		return ""
	}
	one, many, _ := strings.Cut(strings.TrimRight(leftOutText, "\n"), "\n")
	if n == 1 {
		return one
	}
	return strings.ReplaceAll(many, "{n}", strconv.Itoa(n))
}
