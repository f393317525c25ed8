package tokens

import (
	"testing"

	"github.com/loomctx/loom/tokens/internal/ranktable"
	"github.com/tiktoken-go/tokenizer/codec"
)

// TestRankTables checks the embedded tables against the vocabularies they
// were generated from: every token of tiktoken-go's maps to its rank, every
// single byte is a token (countPiece relies on it), and strings that are not
// tokens miss.
func TestRankTables(t *testing.T) {
	for _, tc := range []struct {
		b     *bpe
		codec *codec.Codec
	}{
		{o200k, codec.NewO200kBase()},
		{cl100k, codec.NewCl100kBase()},
	} {
		tc.b.once.Do(tc.b.load)
		table := tc.b.ranks
		tokens := 0
		for id := range table.Len() + 1000 {
			want, err := tc.codec.Decode([]uint{uint(id)})
			if err != nil {
				if id < table.Len() && table.Token(id) != "" {
					t.Errorf("%s: rank %d is %q in the table, not in the library", tc.b.name, id, table.Token(id))
				}
				continue
			}
			tokens++
			if id >= table.Len() {
				t.Fatalf("%s: the library has rank %d, the table stops at %d", tc.b.name, id, table.Len())
			}
			if got := table.Token(id); got != want {
				t.Errorf("%s: rank %d is %q, the library says %q", tc.b.name, id, got, want)
			}
			if r, ok := table.Rank(want); !ok || int(r) != id {
				t.Errorf("%s: Rank(%q) = %d, %v, want %d", tc.b.name, want, r, ok, id)
			}
		}
		if tokens < 100_000 {
			t.Errorf("%s: only %d tokens", tc.b.name, tokens)
		}
		for a := range 256 {
			for c := range 256 {
				want := uint32(noRank)
				if r, ok := table.Rank(string([]byte{byte(a), byte(c)})); ok {
					want = r
				}
				if got := table.PairRank(byte(a), byte(c)); got != want {
					t.Fatalf("%s: PairRank(%#x, %#x) = %d, Rank says %d", tc.b.name, a, c, got, want)
				}
			}
		}
		for c := range 256 {
			if _, ok := table.Rank(string([]byte{byte(c)})); !ok {
				t.Errorf("%s: byte %#x is not a token", tc.b.name, c)
			}
		}
		for _, s := range []string{"", "zzqxjv", "hello world, this is not a token", "\xff\xfe\xfd\xfc\xfb", "<|endoftext|>", "日本語のテキスト"} {
			if r, ok := table.Rank(s); ok {
				t.Errorf("%s: %q is not a token, but Rank says %d", tc.b.name, s, r)
			}
		}
	}
}

func TestRankTableRejectsGarbage(t *testing.T) {
	for _, enc := range []string{"", "loomrnk1", "not a table at all", o200kRanks[:1000]} {
		if _, err := ranktable.Open(enc); err == nil {
			t.Errorf("Open(%.20q…) accepted it", enc)
		}
	}
}
