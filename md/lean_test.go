package md_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/tokens"
)

// A lean pass keeps one record for each scope it finds in the cache; put
// back, its records must be a full pass's, and what it puts in the cache
// must be as whole as what a full pass puts there, whatever is dropped.
func TestLeanPassRecordsMatchFullOnes(t *testing.T) {
	exact, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 41))
		tree := randomTree(rng)
		if rng.IntN(2) == 0 {
			tree = md.Doc(tree, md.Named("more", lineTree(rng, 1)))
		}
		if rng.IntN(2) == 0 {
			// A section that goes whole when its entries are all dropped,
			// with a scope in it that nothing drops from.
			var items []md.Node
			for i := range 1 + rng.IntN(3) {
				items = append(items, md.Named(fmt.Sprintf("e%d", i), md.Item(md.Text("entry"))).Prio(rng.IntN(8)))
			}
			fixed := md.Named("fixed", md.Named("f1", md.Text("one")), md.Named("f2", md.Text("two")))
			tree = md.Doc(tree, md.Sec(2, "Entries", fixed, md.Named("entries", md.UL(items...))))
		}
		cache := md.NewCache()
		for round := range 4 {
			// The second drops differ from the first in a few scopes.
			var first []bool
			dropA := func(string) bool { d := rng.IntN(3) == 0; first = append(first, d); return d }
			i := 0
			dropB := func(string) bool { d := first[i] != (rng.IntN(6) == 0); i++; return d }
			if msg := md.LeanRecordsDiffer(tree, exact, cache, dropA, dropB); msg != "" {
				t.Fatalf("seed %d round %d: %s", seed, round, msg)
			}
		}
	}
}
