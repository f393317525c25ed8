package md

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/loomctx/loom/tokens"
)

// cutLinesReference is cutLines as it was first written: every line
// counted, every candidate's text and marker counted whole. cutLines must
// give the same text and the same figures.
func cutLinesReference(text string, limit int, c Counter, source string) (string, cutInfo) {
	total := c.Count(text)
	lines := strings.SplitAfter(text, "\n")
	safe := make([]int, 0, len(lines)) // byte offsets after a line, outside fences
	costs := make([]int, 0, len(lines))
	inFence, fence := false, ""
	offset, running := 0, 0
	for _, ln := range lines {
		trimmed := strings.TrimLeft(ln, " ")
		if f := fenceOf(trimmed); f != "" {
			switch {
			case !inFence:
				inFence, fence = true, f
			case strings.HasPrefix(trimmed, fence) && strings.TrimSpace(trimmed[len(fence):]) == "":
				inFence = false
			}
		}
		offset += len(ln)
		running += c.Count(ln)
		if !inFence {
			safe = append(safe, offset)
			costs = append(costs, running)
		}
	}
	marker := func(keptBytes int) string {
		return "[… " + strconv.Itoa(countLines(text[keptBytes:])) + " more lines (" +
			strconv.Itoa(total-c.Count(text[:keptBytes])) + " tokens) cut from " + source + "]"
	}
	i := len(safe) - 1
	for i >= 0 && costs[i] > limit {
		i--
	}
	for ; i >= 0; i-- {
		keep := text[:safe[i]]
		out := keep
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += marker(safe[i])
		if c.Count(out) <= limit {
			return out, cutInfo{Lines: countLines(text[safe[i]:]), Tokens: total - c.Count(keep), KeptLines: countLines(keep)}
		}
	}
	return marker(0), cutInfo{Lines: countLines(text), Tokens: total}
}

// wordCount counts words: a counter whose counts do not add up anywhere
// (it is not Additive), so cutLines counts every candidate whole.
type wordCount struct{}

func (wordCount) Count(s string) int { return len(strings.Fields(s)) }

// cutText is a random text of the kinds of lines that decide where counts
// add and where cuts may go: blank lines, indented lines, lines starting
// with "/" or non-ASCII, fenced blocks (some never closed), a last line
// with or without a newline.
func cutText(rng *rand.Rand) string {
	kinds := []string{"plain words here.", "- an item, with more", "## A heading", "", "  indented code()", "\tTab start", "/path/at/start", "é accented start", "😀 emoji line", "```", "~~~~", "a.", "x  ", "中文的一行"}
	var b strings.Builder
	for range 1 + rng.IntN(40) {
		b.WriteString(kinds[rng.IntN(len(kinds))])
		for range rng.IntN(4) {
			b.WriteString(" " + kinds[rng.IntN(len(kinds))])
		}
		b.WriteByte('\n')
	}
	s := b.String()
	if rng.IntN(3) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

// cutLines keeps what the plain reference keeps, with the same figures,
// on random texts and limits, with the exact encodings (whose counts add
// at some line starts) and with a counter that never adds.
func TestCutLinesAgreesWithReference(t *testing.T) {
	o200k, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	cl100k, err := tokens.Uncached(tokens.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	counters := map[string]Counter{"o200k": o200k, "cl100k": cl100k, "words": wordCount{}}
	rng := rand.New(rand.NewPCG(27, 1))
	for _, name := range []string{"o200k", "cl100k", "words"} {
		c := counters[name]
		for i := range 3000 {
			text := cutText(rng)
			if text == "" {
				continue // never cut: cutScope leaves an empty scope as it is
			}
			limit := 1 + rng.IntN(c.Count(text)+20)
			got, gotInfo := cutLines(text, limit, c, "f.md")
			want, wantInfo := cutLinesReference(text, limit, c, "f.md")
			if got != want || gotInfo != wantInfo {
				t.Fatalf("%s, text %d, limit %d: cutLines gave %+v\n%q\nthe reference %+v\n%q\ntext:\n%q", name, i, limit, gotInfo, got, wantInfo, want, text)
			}
		}
	}
}

// BenchmarkCutLines cuts a long memory file to 2,000 tokens (loom's cap on
// memory/MEMORY.md), counting with the uncached o200k_base, against the
// plain reference.
func BenchmarkCutLines(b *testing.B) {
	c, err := tokens.Uncached(tokens.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for sb.Len() < 17_000 {
		sb.WriteString(cutText(rng))
		sb.WriteString("\n")
	}
	text := sb.String()
	for _, impl := range []struct {
		name string
		cut  func(string, int, Counter, string) (string, cutInfo)
	}{{"fast", cutLines}, {"reference", cutLinesReference}} {
		b.Run(impl.name, func(b *testing.B) {
			for b.Loop() {
				impl.cut(text, 2000, c, "memory/MEMORY.md")
			}
		})
	}
}
