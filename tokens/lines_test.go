package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Counting a long text line by line through the cache must give exactly the
// count of the whole text, for both exact encodings.
func FuzzCountLines(f *testing.F) {
	for _, s := range []string{
		"end.\n\nNext paragraph\n",
		"a.\n/path\n/x",
		"x\n  indented\n\tTab\n",
		"## Title\n\n- item one\n- item two\n\n---\n\n<skills>\n  <skill>\n",
		"'s\n's\n'll\n",
		"numbers 123\n4567\n89\n",
		"\u00a0\nnbsp\n\u3000\nideographic space\n",
		"bad \xff\xfe\nbytes\n\xc3\n(",
		"emoji 🙂\n🙂\n",
		"!!!\n\n\n???\r\n\r\nx",
		"<skills>\n  <skill available=\"true\">\n    <name>a</name>\n  </skill>\n</skills>\n",
		"x.\n  \n\ty\n \u00a0z\n\t\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		long := strings.Repeat(s, splitAt/max(len(s), 1)+2)
		for _, b := range []*bpe{o200k, cl100k} {
			want := b.Count(long)
			got := Cached(b, 1<<20).Count(long)
			if got != want {
				t.Fatalf("%s: line by line %d, whole %d, for %q", b.name, got, want, long)
			}
		}
	})
}

// The real prompts in prompt/testdata count the same line by line.
func TestCountLinesOnPrompts(t *testing.T) {
	files, _ := filepath.Glob("../prompt/testdata/*.golden")
	if len(files) == 0 {
		t.Skip("no prompts")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []*bpe{o200k, cl100k} {
			if got, want := Cached(b, 1<<20).Count(string(data)), b.Count(string(data)); got != want {
				t.Errorf("%s %s: %d, want %d", f, b.name, got, want)
			}
		}
	}
}

// Wherever AddsAt allows a cut, the counts of the two sides add up to the
// count of the whole, for both exact encodings; and the answer depends only
// on the bytes it says it reads, so it holds with anything put around them.
func FuzzAddsAt(f *testing.F) {
	for _, s := range []string{
		"end.\n\nNext\n  indented\n\tTab\n",
		"a.\n/path\n  /x\n",
		"<skills>\n  <skill>\n    <name>x</name>\n  </skill>\n</skills>",
		"x\n \n y\n\u3000z\n \u00a0w\n",
		"'s\n 's\n\t'll\n",
		"!!!\n  \n???\n \r\nx",
	} {
		f.Add(s, "pre ", " post")
	}
	f.Fuzz(func(t *testing.T, s, pre, post string) {
		if len(s) > 4096 {
			return
		}
		for _, b := range []*bpe{o200k, cl100k} {
			for i := 1; i < len(s); i++ {
				if !AddsAt(s, i) {
					continue
				}
				if got, want := b.Count(s[:i])+b.Count(s[i:]), b.Count(s); got != want {
					t.Fatalf("%s: cut at %d of %q: %d + %d != %d", b.name, i, s, b.Count(s[:i]), b.Count(s[i:]), want)
				}
				// The same cut inside a longer text.
				w := pre + s + post
				j := len(pre) + i
				if got, want := b.Count(w[:j])+b.Count(w[j:]), b.Count(w); got != want {
					t.Fatalf("%s: cut at %d of %q: %d, want %d", b.name, j, w, got, want)
				}
			}
		}
	})
}
