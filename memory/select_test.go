package memory

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/tokens"
)

func mem(id, cat string, content string, minute int) Memory {
	return Memory{ID: id, Category: cat, Content: content, CreatedAt: time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC)}
}

// TestSelectGreedyFirstFit replays nao's worked example with a counter of
// one token per byte, so every cost can be checked by hand. Lines cost the
// content's length plus 2 for "- ".
func TestSelectGreedyFirstFit(t *testing.T) {
	fill := func(n int) string { return strings.Repeat("a", n-1) + "." }
	ms := []Memory{
		mem("r750", "global_rule", fill(748), 5),     // 750: taken, 250 left
		mem("r500", "global_rule", fill(498), 4),     // 500: does not fit, skipped
		mem("r100", "global_rule", fill(98), 3),      // 100: taken, 150 left
		mem("f150", "personal_fact", fill(148), 9),   // 150: lands exactly on 1000, taken
		mem("f001", "personal_fact", "x", 1),         // 3: nothing left
		mem("newer", "personal_fact", fill(900), 10), // newest fact, 902: considered before f150, skipped
	}
	sel := Select(ms, DefaultCategories, 1000, byteCounter{}, SelectOptions{})
	if sel.Tokens != 1000 || sel.Chosen != 3 || sel.Budget != 1000 {
		t.Errorf("tokens %d, chosen %d, budget %d; want 1000, 3, 1000", sel.Tokens, sel.Chosen, sel.Budget)
	}
	if got := groupIDs(sel); got != "global_rule:r750,r100 personal_fact:f150" {
		t.Errorf("groups = %s", got)
	}
	if got := leftIDs(sel); got != "r500(over budget) newer(over budget) f001(over budget)" {
		t.Errorf("left out = %s", got)
	}
	if sel.OverBudget() != 3 {
		t.Errorf("OverBudget = %d, want 3", sel.OverBudget())
	}
	if sel.LeftOut[0].Tokens != 500 {
		t.Errorf("r500 counted %d tokens, want 500", sel.LeftOut[0].Tokens)
	}
}

func TestSelectOrderAndReasons(t *testing.T) {
	cats := []Category{{Name: "personal_fact", Label: "User Profile"}, {Name: "global_rule", Label: "Rules"}}
	ms := []Memory{
		mem("g1", "global_rule", "Old rule.", 1),
		mem("g2", "global_rule", "New rule.", 2),
		mem("p1", "personal_fact", "A fact.", 0),
		mem("h1", "hobby", "Likes chess.", 3),
		mem("c1", "personal_fact", "From this chat.", 4),
		mem("s1", "global_rule", "Superseded.", 5),
		mem("t1", "global_rule", "Same minute as g2, later in the list.", 2),
	}
	ms[4].Chat = "chat-9"
	ms[5].SupersededBy = "g2"
	sel := Select(ms, cats, 10000, byteCounter{}, SelectOptions{ExcludeChat: "chat-9"})
	if got := groupIDs(sel); got != "personal_fact:p1 global_rule:g2,t1,g1" {
		t.Errorf("groups = %s", got)
	}
	if sel.Groups[0].Category.Label != "User Profile" {
		t.Errorf("group carries %+v", sel.Groups[0].Category)
	}
	if got := leftIDs(sel); got != "c1(current chat) s1(superseded or forgotten) h1(unknown category)" {
		t.Errorf("left out = %s", got)
	}
	if sel.OverBudget() != 0 {
		t.Errorf("OverBudget = %d, want 0", sel.OverBudget())
	}
	// Without ExcludeChat the chat's memory is an ordinary candidate.
	if got := groupIDs(Select(ms, cats, 10000, byteCounter{}, SelectOptions{})); got != "personal_fact:c1,p1 global_rule:g2,t1,g1" {
		t.Errorf("without exclusion: %s", got)
	}
	// A zero or negative budget chooses nothing and says so.
	sel = Select(ms[:3], cats, -5, byteCounter{}, SelectOptions{})
	if sel.Chosen != 0 || len(sel.Groups) != 0 || sel.OverBudget() != 3 || sel.Budget != 0 {
		t.Errorf("negative budget: %+v", sel)
	}
	if sel := Select(nil, cats, 1000, byteCounter{}, SelectOptions{}); sel.Chosen != 0 || sel.Groups != nil || sel.LeftOut != nil {
		t.Errorf("no memories: %+v", sel)
	}
}

// TestSelectRealTokens checks Select against a plain reference that counts
// every line with the real tokenizer, on enough memories that the bound
// passes most of them over.
func TestSelectRealTokens(t *testing.T) {
	for _, enc := range []string{tokens.O200kBase, tokens.Cl100kBase} {
		counter := newBPE(t, enc)
		n := 3000
		if raceEnabled {
			n = 600
		}
		ms := genMemories(n, 7)
		for _, budget := range []int{0, 7, 100, 1000, 5000} {
			for _, exclude := range []string{"", "chat-1"} {
				for i := range ms {
					ms[i].Chat = []string{"", "chat-1", "chat-2"}[i%3]
				}
				counter.calls.Store(0)
				sel := Select(ms, DefaultCategories, budget, counter, SelectOptions{ExcludeChat: exclude})
				if int(counter.calls.Load()) != sel.Counted {
					t.Errorf("Counted = %d, but the counter was called %d times", sel.Counted, counter.calls.Load())
				}
				want := referenceSelect(ms, budget, counter, exclude)
				if got := groupIDs(sel); got != want {
					t.Fatalf("%s budget %d: groups differ from the reference\n got %.300s\nwant %.300s", enc, budget, got, want)
				}
				sum := 0
				for _, g := range sel.Groups {
					for _, m := range g.Memories {
						sum += counter.Count(Line(m))
					}
				}
				if sum != sel.Tokens || sum > budget {
					t.Errorf("%s budget %d: lines cost %d, Selection says %d", enc, budget, sum, sel.Tokens)
				}
				if sel.Chosen+len(sel.LeftOut) != len(ms) {
					t.Errorf("%d chosen + %d left out != %d memories", sel.Chosen, len(sel.LeftOut), len(ms))
				}
				if budget == 1000 && sel.Counted > 4*sel.Chosen+50 {
					t.Errorf("%s: counted %d lines to choose %d", enc, sel.Counted, sel.Chosen)
				}
				t.Logf("%s budget %d exclude %q: chose %d, counted %d of %d", enc, budget, exclude, sel.Chosen, sel.Counted, len(ms))
			}
		}
	}
}

// referenceSelect is greedy first-fit written the plain way: sort, then
// count every line.
func referenceSelect(ms []Memory, budget int, c Counter, exclude string) string {
	prio := map[string]int{"global_rule": 0, "personal_fact": 1}
	sorted := slices.Clone(ms)
	slices.SortStableFunc(sorted, func(a, b Memory) int {
		if prio[a.Category] != prio[b.Category] {
			return prio[a.Category] - prio[b.Category]
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	var sel Selection
	byCat := map[string][]Memory{}
	left := budget
	for _, m := range sorted {
		if exclude != "" && m.Chat == exclude {
			continue
		}
		if n := c.Count("- " + m.Content); n <= left {
			left -= n
			byCat[m.Category] = append(byCat[m.Category], m)
		}
	}
	for _, cat := range DefaultCategories {
		if len(byCat[cat.Name]) > 0 {
			sel.Groups = append(sel.Groups, Group{Category: cat, Memories: byCat[cat.Name]})
		}
	}
	return groupIDs(sel)
}

func TestBPELowerBound(t *testing.T) {
	o200k := newBPE(t, tokens.O200kBase)
	cl100k := newBPE(t, tokens.Cl100kBase)
	// Plain ASCII lines whose bound is exact: each piece is one token.
	for _, s := range []string{"- Respond in French.", "- The user is Alex.", "- Never use tables!"} {
		if b, n := BPELowerBound(s), o200k.Count(s); b != n {
			t.Errorf("BPELowerBound(%q) = %d, o200k counts %d", s, b, n)
		}
	}
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"   ", 0},
		{"-", 1},
		{"a.b", 2},      // "a", ".b"
		{"(word)", 2},   // "(word", ")"
		{"((word", 2},   // "((", "word"
		{"1234567", 3},  // "123", "456", "7"
		{"x1y", 3},      // "x", "1", "y"
		{"it's", 1},     // apostrophe: one piece at least
		{"Zürich.", 1},  // non-ASCII: one piece at least
		{"a\tb\nc", 3},  // ASCII white space splits words
		{"a\u00a0b", 1}, // no-break space does not
		{"<|endoftext|>", 3},
	}
	for _, tt := range tests {
		if got := BPELowerBound(tt.s); got != tt.want {
			t.Errorf("BPELowerBound(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}

	// The bound never exceeds the real count, on realistic memories and on
	// random strings built to find the pattern's corners.
	tries := 10000
	if raceEnabled {
		tries = 1000
	}
	var texts []string
	for _, m := range genMemories(tries/2, 3) {
		texts = append(texts, Line(m))
	}
	alphabet := []string{"a", "B", "z", "é", "ß", "東", "🚀", "\u0301", "1", "22", "٣", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2003",
		".", ",", "'", "’", "(", ")", "-", "/", "!", "?", "'s", "'T", "<|endoftext|>", "_", "\x00", "\xff"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range tries {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		b := BPELowerBound(s)
		for _, c := range []*bpeCounter{o200k, cl100k} {
			if n := c.Count(s); b > n {
				t.Fatalf("BPELowerBound(%q) = %d, but %s counts %d", s, b, c.name, n)
			}
		}
	}
}

func TestLeftOutNotice(t *testing.T) {
	for n, want := range map[int]string{
		0: "",
		1: "1 more memory was left out for length.",
		8: "8 more memories were left out for length.",
	} {
		if got := LeftOutNotice(n); got != want {
			t.Errorf("LeftOutNotice(%d) = %q, want %q", n, got, want)
		}
	}
}

func groupIDs(sel Selection) string {
	var parts []string
	for _, g := range sel.Groups {
		var ids []string
		for _, m := range g.Memories {
			ids = append(ids, m.ID)
		}
		parts = append(parts, g.Category.Name+":"+strings.Join(ids, ","))
	}
	return strings.Join(parts, " ")
}

func leftIDs(sel Selection) string {
	var parts []string
	for _, l := range sel.LeftOut {
		parts = append(parts, l.Memory.ID+"("+string(l.Reason)+")")
	}
	return strings.Join(parts, " ")
}

// FuzzBPELowerBound looks for text whose bound exceeds the real o200k_base
// or cl100k_base count: go test -fuzz FuzzBPELowerBound ./memory
func FuzzBPELowerBound(f *testing.F) {
	for _, s := range []string{"- Respond in French.", "a.b", "((word", "1234567", "it's", "<|endoftext|>", "x\u0301!'s", "  \t\n"} {
		f.Add(s)
	}
	o200k := newBPE(f, tokens.O200kBase)
	cl100k := newBPE(f, tokens.Cl100kBase)
	f.Fuzz(func(t *testing.T, s string) {
		b := BPELowerBound(s)
		for _, c := range []*bpeCounter{o200k, cl100k} {
			if n := c.Count(s); b > n {
				t.Fatalf("BPELowerBound(%q) = %d, but %s counts %d", s, b, c.name, n)
			}
		}
	})
}
