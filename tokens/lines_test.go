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
