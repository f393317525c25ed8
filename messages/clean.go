package messages

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DefaultMaxToolChars is where Clean cuts a tool result.
const DefaultMaxToolChars = 16000

// imagePlaceholder replaces an image in cleaned history. It says nothing
// about the image, so the model does not guess at its content.
const imagePlaceholder = "[image]"

// CleanOptions tunes Clean.
type CleanOptions struct {
	// MaxToolChars caps a tool result, in characters (runes); 0 means
	// DefaultMaxToolChars and a negative value means no cap.
	MaxToolChars int
}

// CleanReport counts what Clean changed.
type CleanReport struct {
	RuntimeBlocks       int `json:"runtime_blocks_removed"`
	Images              int `json:"images_replaced"`
	ToolResultsCut      int `json:"tool_results_cut"`
	EmptyDropped        int `json:"empty_messages_dropped"`
	LeadingDropped      int `json:"leading_messages_dropped"`
	OrphanResults       int `json:"orphan_tool_results_dropped"`
	UnansweredToolCalls int `json:"unanswered_tool_calls_dropped"`
}

// Clean turns messages an agent sent into the history it should persist
// and replay: runtime blocks removed by their markers, images replaced by
// "[image]", long tool results cut with a marker, empty messages dropped,
// tool calls and results kept in pairs, and the start moved to the first
// user message so no tool result is orphaned. Clean is idempotent, and a
// turn built on cleaned history replays it byte for byte, which is what
// keeps a provider's prefix cache hitting.
func Clean(msgs []Message, opts CleanOptions) ([]Message, CleanReport) {
	max := opts.MaxToolChars
	if max == 0 {
		max = DefaultMaxToolChars
	}
	var rep CleanReport
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		m = m.clone()
		cleanContent(&m, max, &rep)
		if m.Content.IsEmpty() && len(m.ToolCalls) == 0 && m.Role != RoleTool {
			rep.EmptyDropped++
			continue
		}
		out = append(out, m)
	}
	out = pairTools(out, &rep)
	for i, m := range out {
		if m.Role == RoleUser {
			rep.LeadingDropped += i
			return out[i:], rep
		}
	}
	rep.LeadingDropped += len(out)
	return out[:0], rep
}

func cleanContent(m *Message, max int, rep *CleanReport) {
	if m.Content.Parts == nil {
		if m.Role == RoleUser {
			if s, ok := StripRuntime(m.Content.Text); ok {
				m.Content.Text = s
				rep.RuntimeBlocks++
			}
		}
		if m.Role == RoleTool {
			m.Content.Text = cutTool(m.Content.Text, max, rep)
		}
		return
	}
	parts := m.Content.Parts[:0]
	for _, p := range m.Content.Parts {
		switch {
		case p.Type == PartImage:
			p = Part{Type: PartText, Text: imagePlaceholder}
			rep.Images++
		case m.Role == RoleUser && isRuntimeBlock(p.Text):
			rep.RuntimeBlocks++
			continue
		case m.Role == RoleUser:
			if s, ok := StripRuntime(p.Text); ok {
				p.Text = s
				rep.RuntimeBlocks++
			}
		case m.Role == RoleTool:
			p.Text = cutTool(p.Text, max, rep)
		}
		parts = append(parts, p)
	}
	m.Content.Parts = parts
}

func cutTool(s string, max int, rep *CleanReport) string {
	cut := CutToolResult(s, max)
	if len(cut) != len(s) {
		rep.ToolResultsCut++
	}
	return cut
}

// CutToolResult keeps the start of a tool result over max characters and
// says how long it was; a negative max keeps everything. The result, marker
// included, fits in max, so cutting again changes nothing. An agent that
// cuts results with it before sending them sends what Clean will persist,
// so the next turn's prefix still matches.
func CutToolResult(s string, max int) string {
	if max < 0 || len(s) <= max {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	marker := fmt.Sprintf("\n[… tool result cut by loom: %d characters in all]", n)
	keep := max - utf8.RuneCountInString(marker)
	if keep < 0 {
		keep = 0
	}
	i, kept := 0, 0
	for i < len(s) && kept < keep {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		kept++
	}
	return s[:i] + marker
}

// pairTools keeps tool calls and tool results together: a tool result must
// answer a call of the assistant message just before its run of results,
// and a call with no result is removed (an assistant left with nothing is
// dropped), since providers reject either half alone.
func pairTools(msgs []Message, rep *CleanReport) []Message {
	out := make([]Message, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == RoleTool {
			// Only a result not consumed below reaches here.
			rep.OrphanResults++
			continue
		}
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			out = append(out, m)
			continue
		}
		// Gather the run of tool results after this assistant message.
		j := i + 1
		for j < len(msgs) && msgs[j].Role == RoleTool {
			j++
		}
		results := msgs[i+1 : j]
		answered := make(map[string]bool, len(results))
		for _, r := range results {
			answered[r.ToolCallID()] = true
		}
		calls := m.ToolCalls[:0:0]
		called := make(map[string]bool, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			if answered[tc.ID] && !called[tc.ID] {
				calls = append(calls, tc)
				called[tc.ID] = true
			} else {
				rep.UnansweredToolCalls++
			}
		}
		m.ToolCalls = calls
		if len(calls) == 0 {
			m.ToolCalls = nil
		}
		if m.Content.IsEmpty() && len(m.ToolCalls) == 0 {
			rep.EmptyDropped++
		} else {
			out = append(out, m)
		}
		for _, r := range results {
			if called[r.ToolCallID()] {
				out = append(out, r)
				delete(called, r.ToolCallID()) // a second result for one call is an orphan
			} else {
				rep.OrphanResults++
			}
		}
		i = j - 1
	}
	return out
}

// CutMiddle shortens s to at most max tokens as c counts them, keeping its
// head and tail around a marker line that says how many characters were
// cut, so the model sees both how a message began and how it ended. It
// returns s unchanged when it fits, and the marker alone when not even a
// character of each end fits (which may still be over max). Like
// CutToolResult it cuts between characters, never inside one, and a result
// within max is returned as is when cut again.
func CutMiddle(s string, max int, c Counter) string {
	if max < 0 || c.Count(s) <= max {
		return s
	}
	runes := []rune(s)
	n := len(runes)
	marker := func(cut int) string {
		return fmt.Sprintf("\n\n[… %d characters cut by loom from the middle of this message …]\n\n", cut)
	}
	// Start from the share of characters the token ratio allows, then give
	// up a tenth at a time until the exact count fits: a few counts, not
	// a search over every length.
	total := c.Count(s)
	keep := int(float64(n) * float64(max) / float64(total))
	for keep > 1 {
		head, tail := keep/2, keep-keep/2
		out := string(runes[:head]) + marker(n-keep) + string(runes[n-tail:])
		if c.Count(out) <= max {
			return out
		}
		keep = keep * 9 / 10
	}
	return strings.TrimSpace(marker(n))
}
