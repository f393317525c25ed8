package tokens

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// expected mirrors testdata/expected.json, written by
// bench/tokens/gen-expected.mjs with npm tiktoken.
type expected struct {
	Generator string
	Files     []struct {
		Name   string
		Bytes  int
		Counts map[string]int
	}
	Strings []struct {
		Text   string
		Counts map[string]int
	}
	Repeats []struct {
		Unit   string
		Times  int
		Counts map[string]int
	}
}

func loadExpected(t testing.TB) expected {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp expected
	if err := json.Unmarshal(data, &exp); err != nil {
		t.Fatalf("testdata/expected.json: %v", err)
	}
	return exp
}

func readCorpus(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var exactEncodings = []string{Cl100kBase, O200kBase}

// TestMatchesTiktoken checks every count against npm tiktoken's, through the
// uncached and the cached counters alike.
func TestMatchesTiktoken(t *testing.T) {
	exp := loadExpected(t)
	entries, err := os.ReadDir(filepath.Join("testdata", "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.Files) != len(entries) {
		t.Fatalf("expected.json has %d files, corpus has %d: run bench/tokens/gen-expected.sh", len(exp.Files), len(entries))
	}
	check := func(t *testing.T, what, text string, want map[string]int) {
		t.Helper()
		for _, enc := range exactEncodings {
			w, ok := want[enc]
			if !ok {
				t.Fatalf("%s: expected.json has no %s count", what, enc)
			}
			u, _ := Uncached(enc)
			c, _ := Get(enc)
			if got := u.Count(text); got != w {
				t.Errorf("%s: %s: got %d tokens, tiktoken says %d", what, enc, got, w)
			}
			if got := c.Count(text); got != w {
				t.Errorf("%s: %s cached: got %d tokens, tiktoken says %d", what, enc, got, w)
			}
		}
	}
	for _, f := range exp.Files {
		text := readCorpus(t, f.Name)
		if len(text) != f.Bytes {
			t.Errorf("%s: %d bytes, expected.json says %d: run bench/tokens/gen-expected.sh", f.Name, len(text), f.Bytes)
			continue
		}
		check(t, f.Name, text, f.Counts)
	}
	for _, s := range exp.Strings {
		check(t, strings.ToValidUTF8(s.Text, "?"), s.Text, s.Counts)
	}
	for _, r := range exp.Repeats {
		check(t, fmt.Sprintf("%q×%d", r.Unit, r.Times), strings.Repeat(r.Unit, r.Times), r.Counts)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestSpecialTokensAreText pins the encode_ordinary behaviour: a special
// token's text costs the tokens of its characters, never one special id.
func TestSpecialTokensAreText(t *testing.T) {
	exp := loadExpected(t)
	seen := false
	for _, s := range exp.Strings {
		if s.Text != "<|endoftext|>" {
			continue
		}
		seen = true
		for _, enc := range exactEncodings {
			c, _ := Get(enc)
			got := c.Count(s.Text)
			if got != s.Counts[enc] || got <= 1 {
				t.Errorf("%s: <|endoftext|> counts %d, tiktoken encode_ordinary says %d (a special token would be 1)", enc, got, s.Counts[enc])
			}
		}
	}
	if !seen {
		t.Fatal("expected.json lacks the <|endoftext|> case")
	}
}

func TestGet(t *testing.T) {
	for _, name := range Names() {
		c, err := Get(name)
		if err != nil {
			t.Fatalf("Get(%q): %v", name, err)
		}
		if got := NameOf(c); got != name {
			t.Errorf("Get(%q) is named %q", name, got)
		}
		u, err := Uncached(name)
		if err != nil || NameOf(u) != name {
			t.Errorf("Uncached(%q) = %v, %v", name, NameOf(u), err)
		}
	}
	a, _ := Get(O200kBase)
	b, _ := Get(O200kBase)
	if a != b {
		t.Error("Get returns a new counter each time; the cache would not be shared")
	}

	_, err := Get("p50k_base")
	var unk *UnknownEncodingError
	if !errors.As(err, &unk) || unk.Name != "p50k_base" {
		t.Fatalf("Get(p50k_base) error = %v, want *UnknownEncodingError", err)
	}
	want := `unknown encoding "p50k_base" (valid: o200k_base, cl100k_base, chars4)`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if _, err := Uncached("O200K_BASE"); err == nil {
		t.Error("encoding names are exact; Uncached accepted O200K_BASE")
	}
}

func TestForModel(t *testing.T) {
	tests := []struct {
		model    string
		encoding string
		fallback bool
	}{
		{"gpt-4o", O200kBase, false},
		{"gpt-4o-mini", O200kBase, false},
		{"gpt-4o-2024-08-06", O200kBase, false},
		{"chatgpt-4o-latest", O200kBase, false},
		{"gpt-4.1", O200kBase, false},
		{"gpt-4.1-nano", O200kBase, false},
		{"gpt-4.5-preview", O200kBase, false},
		{"gpt-5", O200kBase, false},
		{"gpt-5-mini", O200kBase, false},
		{"gpt-5.1", O200kBase, false},
		{"gpt-5.2-codex", O200kBase, false},
		{"gpt-oss-120b", O200kBase, false},
		{"o1", O200kBase, false},
		{"o1-preview", O200kBase, false},
		{"o3-mini", O200kBase, false},
		{"o4-mini-2025-04-16", O200kBase, false},
		{"GPT-4O", O200kBase, false},
		{" gpt-4o ", O200kBase, false},
		{"openai/gpt-4o", O200kBase, false},
		{"openrouter/openai/gpt-5", O200kBase, false},
		{"ft:gpt-4o-mini:acme::abc123", O200kBase, false},
		{"gpt-4", Cl100kBase, false},
		{"gpt-4-turbo", Cl100kBase, false},
		{"gpt-4-0613", Cl100kBase, false},
		{"gpt-4-32k", Cl100kBase, false},
		{"openai/gpt-4", Cl100kBase, false},
		{"ft:gpt-4-0613:acme::x", Cl100kBase, false},
		{"gpt-3.5-turbo", Cl100kBase, false},
		{"gpt-3.5-turbo-16k", Cl100kBase, false},
		{"gpt-35-turbo", Cl100kBase, false},
		{"text-embedding-3-small", Cl100kBase, false},
		// Unknown: the default, and said so.
		{"", O200kBase, true},
		{"claude-sonnet-4-5", O200kBase, true},
		{"anthropic/claude-3-5-haiku", O200kBase, true},
		{"llama-3.1-70b", O200kBase, true},
		{"gpt-4x", O200kBase, true},
		{"gpt-50", O200kBase, true},
		{"o10", O200kBase, true},
		{"omni-moderation-latest", O200kBase, true},
	}
	for _, tt := range tests {
		c, res := ForModel(tt.model)
		if res.Encoding != tt.encoding || res.Fallback != tt.fallback || res.Model != tt.model {
			t.Errorf("ForModel(%q) = %+v, want encoding %s fallback %v", tt.model, res, tt.encoding, tt.fallback)
		}
		if NameOf(c) != res.Encoding {
			t.Errorf("ForModel(%q): counter %q, resolution %q", tt.model, NameOf(c), res.Encoding)
		}
	}
	_, res := ForModel("claude-sonnet-4")
	if got, want := res.String(), "claude-sonnet-4: unknown model, counted with o200k_base"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	_, res = ForModel("gpt-4")
	if got, want := res.String(), "gpt-4: cl100k_base"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestEstimate(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"hello world!", 3},
		{"日本語", 1},             // 3 runes, 9 bytes
		{"日本語のテキスト", 2},        // 8 runes
		{"😀😀😀😀😀", 2},           // 5 runes, 10 UTF-16 units
		{"ab\xffcd", 2},        // 5 runes once the bad byte is U+FFFD
		{"ab\xff\xfe\xfdc", 1}, // one run, one U+FFFD: 4 runes
	}
	for _, tt := range tests {
		if got := (Estimate{}).Count(tt.text); got != tt.want {
			t.Errorf("chars4(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

// TestInvalidUTF8 checks that bad bytes count as the U+FFFD that replaces
// them, the way workspace.Normalize repairs a file.
func TestInvalidUTF8(t *testing.T) {
	tests := []struct{ bad, repaired string }{
		{"\xff", "\uFFFD"},
		{"a\xffb", "a\uFFFDb"},
		{"\xff\xfe\xfd", "\uFFFD"},
		{"caf\xc3", "caf\uFFFD"},                       // truncated é
		{"\xed\xa0\x80 surrogate", "\uFFFD surrogate"}, // UTF-16 surrogate in UTF-8
		{"ok \xe6\x97 \xe6\x97\xa5", "ok \uFFFD 日"},
	}
	for _, name := range Names() {
		c, _ := Uncached(name)
		for _, tt := range tests {
			if got, want := c.Count(tt.bad), c.Count(tt.repaired); got != want {
				t.Errorf("%s: Count(%q) = %d, Count(%q) = %d", name, tt.bad, got, tt.repaired, want)
			}
		}
	}
}

// countingCounter records how often it is asked, to prove the cache works.
type countingCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingCounter) Count(text string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[text]++
	return len(text) + 1 // distinct per length, so a mix-up shows
}

func (c *countingCounter) Name() string { return "counting" }

func (c *countingCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

func TestCachedCountsOnce(t *testing.T) {
	inner := &countingCounter{}
	c := Cached(inner, 1<<20)
	long := strings.Repeat("x", 10_000)
	longOther := strings.Repeat("y", 10_000) // same length, other content
	for range 3 {
		for _, s := range []string{"short", long, longOther, "short2"} {
			if got := c.Count(s); got != len(s)+1 {
				t.Fatalf("Count(%.10q) = %d, want %d", s, got, len(s)+1)
			}
		}
	}
	for _, s := range []string{"short", long, longOther, "short2"} {
		if n := inner.calls[s]; n != 1 {
			t.Errorf("inner counter called %d times for %.10q, want 1", n, s)
		}
	}
	if NameOf(c) != "counting" {
		t.Errorf("Cached hides the name: %q", NameOf(c))
	}
	// A copy of the text, not the same pointer, must hit too.
	copyOfLong := strings.Clone(long)
	c.Count(copyOfLong)
	if n := inner.calls[long]; n != 1 {
		t.Errorf("equal content in another string missed the cache (%d calls)", n)
	}
}

func TestCachedShortKeyDoesNotPin(t *testing.T) {
	big := strings.Repeat("z", 1<<16)
	inner := &countingCounter{}
	c := Cached(inner, 1<<20).(*cachedCounter)
	c.Count(big[:10])
	for i := range c.shards {
		for k := range c.shards[i].cur {
			if k.short != "" && strings.HasPrefix(big, k.short) && len(k.short) == 10 {
				if &[]byte(k.short)[0] == &[]byte(big)[0] {
					t.Fatal("cache key shares memory with the caller's string")
				}
			}
		}
	}
}

func TestCachedBounded(t *testing.T) {
	const budget = 64 << 10
	inner := &countingCounter{}
	c := Cached(inner, budget).(*cachedCounter)
	for i := range 20_000 {
		c.Count("text number " + itoa(i))
	}
	used := 0
	for i := range c.shards {
		s := &c.shards[i]
		for k := range s.cur {
			used += entryOverhead + len(k.short)
		}
		for k := range s.prev {
			used += entryOverhead + len(k.short)
		}
	}
	if used > budget {
		t.Errorf("cache holds %d bytes, budget %d", used, budget)
	}
	if used < budget/4 {
		t.Errorf("cache holds only %d bytes of a %d budget: eviction too eager", used, budget)
	}
	// A zero budget caches nothing but still counts.
	z := Cached(inner, 0)
	before := inner.total()
	z.Count("again")
	z.Count("again")
	if inner.total()-before != 2 {
		t.Error("a zero-budget cache remembered a count")
	}
}

// TestCachedRecentSurvives checks the two-generation eviction: a text in use
// stays cached while a stream of one-off texts passes through.
func TestCachedRecentSurvives(t *testing.T) {
	inner := &countingCounter{}
	c := Cached(inner, 32<<10)
	hot := "the system prompt header"
	for i := range 50_000 {
		c.Count(hot)
		c.Count("one-off " + itoa(i))
	}
	if n := inner.calls[hot]; n != 1 {
		t.Errorf("hot text counted %d times, want 1", n)
	}
}

func TestCachedConcurrent(t *testing.T) {
	c, _ := Get(O200kBase)
	u, _ := Uncached(O200kBase)
	texts := []string{"alpha beta", "gamma delta epsilon", strings.Repeat("zeta ", 100), "日本語"}
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = u.Count(s)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(texts)
				if got := c.Count(texts[k]); got != want[k] {
					t.Errorf("concurrent Count(%.10q) = %d, want %d", texts[k], got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestLazyLoad runs in a fresh process, where nothing has counted yet, and
// checks that getting a counter does not build its vocabulary.
func TestLazyLoad(t *testing.T) {
	if os.Getenv("LOOM_TOKENS_LAZY_CHILD") == "1" {
		Get(O200kBase)
		ForModel("gpt-4")
		if o200k.ranks != nil || cl100k.ranks != nil {
			os.Exit(3)
		}
		c, _ := Get(Cl100kBase)
		c.Count("hi")
		if cl100k.ranks == nil || o200k.ranks != nil {
			os.Exit(4)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLazyLoad$")
	cmd.Env = append(os.Environ(), "LOOM_TOKENS_LAZY_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func FuzzCount(f *testing.F) {
	for _, s := range []string{"", "a", "hello world", "\xff", "caf\xc3", "日本語", "<|endoftext|>", "   \n\t", "\xed\xa0\x80", "a\x00b"} {
		f.Add(s)
	}
	counters := map[string]Counter{}
	for _, name := range Names() {
		counters[name], _ = Uncached(name)
	}
	cached, _ := Get(O200kBase)
	o200k.once.Do(o200k.load) // the merge check below calls o200k directly
	f.Fuzz(func(t *testing.T, s string) {
		fixed := valid(s)
		if !utf8.ValidString(fixed) {
			t.Fatalf("valid(%q) = %q is not valid UTF-8", s, fixed)
		}
		if got, want := runeCount(s), utf8.RuneCountInString(fixed); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", s, got, want)
		}
		if len(fixed) >= 2 && len(fixed) < heapThreshold {
			if a, b := o200k.mergeScan(fixed), o200k.mergeHeap(fixed); a != b {
				t.Fatalf("merging %q: scan gives %d parts, heap %d", fixed, a, b)
			}
		}
		for name, c := range counters {
			n := c.Count(s)
			if n < 0 || n > len(fixed) || (n == 0) != (s == "") {
				t.Fatalf("%s: Count(%q) = %d, text has %d bytes", name, s, n, len(fixed))
			}
			if m := c.Count(fixed); m != n {
				t.Fatalf("%s: Count(%q) = %d but Count of its repair = %d", name, s, n, m)
			}
			if name == O200kBase {
				if m := cached.Count(s); m != n {
					t.Fatalf("cached Count(%q) = %d, uncached %d", s, m, n)
				}
			}
		}
	})
}

// TestPieceMemo checks that remembering long pieces changes no count, keeps
// within its budget, and leaves huge pieces out.
func TestPieceMemo(t *testing.T) {
	b := &bpe{name: O200kBase, next: nextO200k, encoded: &o200kRanks}
	fresh := &bpe{name: O200kBase, next: nextO200k, encoded: &o200kRanks}
	text := readCorpus(t, "spaces.txt") + strings.Repeat("=", 500) + "\n" + strings.Repeat("日本語", 40)
	want := b.Count(text)
	if len(b.long.m) == 0 {
		t.Fatal("no long piece remembered")
	}
	if got := b.Count(text); got != want {
		t.Errorf("second count %d, first %d", got, want)
	}
	for range 3 {
		// Distinct long pieces, more than the budget holds.
		for i := range memoMaxBytes/500 + 10 {
			s := strings.Repeat(" ", 100+i%400) + "x" + strings.Repeat("-", 100+i/400)
			if got, want := b.Count(s), fresh.countNoMemo(s); got != want {
				t.Fatalf("Count(%d spaces…) = %d, want %d", 100+i%400, got, want)
			}
		}
	}
	if b.long.bytes > memoMaxBytes {
		t.Errorf("memo holds %d bytes, budget %d", b.long.bytes, memoMaxBytes)
	}
	huge := strings.Repeat("a", memoMaxPiece+1)
	b.Count(huge)
	if _, ok := b.long.m[huge]; ok {
		t.Error("a piece over memoMaxPiece was remembered")
	}
}

// countNoMemo counts like Count without the piece memo.
func (b *bpe) countNoMemo(text string) int {
	b.once.Do(b.load)
	n := 0
	for i := 0; i < len(text); {
		j := b.next(text, i)
		piece := text[i:j]
		switch _, ok := b.ranks.Rank(piece); {
		case len(piece) == 1 || ok:
			n++
		case len(piece) < heapThreshold:
			n += b.mergeScan(piece)
		default:
			n += b.mergeHeap(piece)
		}
		i = j
	}
	return n
}
