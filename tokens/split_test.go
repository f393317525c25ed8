package tokens

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// The oracle for the splitters is regexp2 running the patterns themselves.
// Wrapping a pattern in (?:…) keeps regexp2 on its interpreter: tiktoken-go
// registers generated matchers under the bare pattern texts, and those get
// some whitespace wrong.
var oracles = sync.OnceValue(func() map[string]*regexp2.Regexp {
	return map[string]*regexp2.Regexp{
		O200kBase:  regexp2.MustCompile("(?:"+o200kPattern+")", regexp2.None),
		Cl100kBase: regexp2.MustCompile("(?:"+cl100kPattern+")", regexp2.None),
	}
})

var splitters = map[string]func(string, int) int{
	O200kBase:  nextO200k,
	Cl100kBase: nextCl100k,
}

// oracleEnds returns where regexp2's matches end, failing if they do not
// cover the text.
func oracleEnds(t testing.TB, enc, text string) []int {
	t.Helper()
	var ends []int
	m, err := oracles()[enc].FindStringMatch(text)
	prev := 0
	for ; m != nil && err == nil; m, err = oracles()[enc].FindNextMatch(m) {
		start, length := m.ByteRange()
		if start != prev {
			t.Fatalf("%s: regexp2 skipped %q", enc, text[prev:start])
		}
		prev = start + length
		ends = append(ends, prev)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ends
}

func splitEnds(enc, text string) []int {
	classOnce.Do(loadClasses)
	var ends []int
	for i := 0; i < len(text); {
		j := splitters[enc](text, i)
		if j <= i || j > len(text) {
			panic(fmt.Sprintf("%s: piece at %d of %q ends at %d", enc, i, text, j))
		}
		ends = append(ends, j)
		i = j
	}
	return ends
}

// checkSplit compares the splitters with regexp2 on text (repaired first,
// as Count does).
func checkSplit(t testing.TB, text string) {
	t.Helper()
	text = valid(text)
	for _, enc := range exactEncodings {
		want := oracleEnds(t, enc, text)
		got := splitEnds(enc, text)
		if !slices.Equal(got, want) {
			// Show the pieces from the first difference on, a few of them.
			g, w := pieces(text, got), pieces(text, want)
			k := 0
			for k < len(g) && k < len(w) && g[k] == w[k] {
				k++
			}
			g, w = g[k:min(len(g), k+4)], w[k:min(len(w), k+4)]
			if len(text) > 200 {
				text = text[:200] + "…"
			}
			t.Fatalf("%s: split of %q, from piece %d:\n got  %q\n want %q", enc, text, k, g, w)
		}
	}
}

func pieces(text string, ends []int) []string {
	var out []string
	start := 0
	for _, e := range ends {
		out = append(out, text[start:e])
		start = e
	}
	return out
}

// splitAlphabet has a rune or two of every class the patterns tell apart,
// and the look-alikes that must not be confused with them.
var splitAlphabet = []string{
	"a", "b", "z", "A", "Z", "s", "S", "t", "T", "r", "R", "e", "E", "v", "V", "m", "M", "l", "L", "d", "D",
	"'", "'", "'", "’", "ʼ", "0", "7", "٣", "Ⅻ", "½", "²",
	" ", " ", " ", " ", "\t", "\n", "\n", "\r", "\v", "\f", "\u0085", "\u00a0", "\u1680", "\u2003", "\u2028", "\u2029", "\u202f", "\u3000", "\u200b", "\ufeff",
	"!", ".", ",", "/", "/", "-", "_", "(", "\"", "<|", "|>", "\x00", "\x7f",
	"é", "ß", "ǅ", "ʰ", "ー", "日", "本", "\u0301", "\u0903", "\u20dd", "ſ", "\u212a", "İ", "ﬁ",
	"😀", "👨\u200d👩", "\U0001d400", "\U0001d7ce", "\U00020000", "\U000e0100", "\ufffd",
}

func randomText(r *rand.Rand, maxRunes int) string {
	var b strings.Builder
	for range r.IntN(maxRunes) + 1 {
		b.WriteString(splitAlphabet[r.IntN(len(splitAlphabet))])
	}
	return b.String()
}

// TestSplitMatchesRegexp2 runs the oracle comparison that FuzzSplit runs, on
// the corpus, the expected.json strings and a few hundred generated texts,
// so that every test run checks it.
func TestSplitMatchesRegexp2(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		checkSplit(t, readCorpus(t, e.Name()))
	}
	exp := loadExpected(t)
	for _, s := range exp.Strings {
		checkSplit(t, s.Text)
	}
	for _, rep := range exp.Repeats {
		checkSplit(t, strings.Repeat(rep.Unit, min(rep.Times, 300)))
	}
	for _, s := range []string{
		"x\n \n", "a  b", "a   1", "  !", " \n x", "\r\n\r\n", "don't DON'T they'RE I'Ve we'LL", "'s's'S", "'ſ 'K", "A'ſ0", "A'ſſ", "x'Ll'ſ",
		"ABCdef", "ABCǅ", "Aʰ", "aʰ\u0301", "\u0301\u0301", "!\u0301a", " \u0301", "123456", "1½Ⅻ", "!!\n\n//\n", "!/\n/",
		"\u00a0x", "\u00a0\u00a0x", " \u3000x", "\t\tx", "a\u2028b",
	} {
		checkSplit(t, s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := 400
	if testing.Short() {
		n = 100
	}
	for range n {
		checkSplit(t, randomText(r, 40))
	}
}

func FuzzSplit(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		f.Add(randomText(r, 20))
	}
	f.Add("x\n \n\xff\xfe'S")
	f.Fuzz(func(t *testing.T, s string) {
		checkSplit(t, s)
	})
}

// TestClassTable checks the class table, built by walking range tables,
// against the unicode package's answer for every rune.
func TestClassTable(t *testing.T) {
	classOnce.Do(loadClasses)
	var buf [utf8.UTFMax]byte
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		n := utf8.EncodeRune(buf[:], r)
		got, size := classAt(string(buf[:n]), 0)
		if want := classify(r); got != want || size != n {
			t.Fatalf("classAt(%U) = %06b, %d; unicode tables say %06b, %d", r, got, size, want, n)
		}
		if space := got&cSpace != 0; space != unicode.IsSpace(r) {
			t.Fatalf("%U: class says space %v, unicode.IsSpace %v", r, space, !space)
		}
	}
}

// TestContractionFolding backs contraction's case folding: regexp2 folds
// a letter to every rune of its unicode.SimpleFold orbit, and the only
// non-ASCII rune in the orbits of the contractions' letters is ſ.
func TestContractionFolding(t *testing.T) {
	var extra []rune
	for _, c := range "strevmld" {
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				extra = append(extra, f)
			}
		}
	}
	if !slices.Equal(extra, []rune{'ſ'}) {
		t.Errorf("the contractions' letters fold to %q beyond ASCII; contraction knows only ſ", extra)
	}
	for _, tt := range []struct {
		text string
		end  int
	}{
		{"'s", 2}, {"'S", 2}, {"'ſ", 3}, {"'ſx", 3}, {"'\xc5", 0}, {"'\xc5x", 0}, {"'re", 3}, {"'RE", 3}, {"'rx", 0},
		{"'ll", 3}, {"'Ll", 3}, {"'l", 0}, {"'d", 2}, {"’s", 0}, {"'k", 0}, {"'\u212a", 0}, {"'", 0}, {"s", 0},
	} {
		if got := contraction(tt.text, 0); got != tt.end {
			t.Errorf("contraction(%q) = %d, want %d", tt.text, got, tt.end)
		}
	}
}
