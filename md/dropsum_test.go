package md

import (
	"encoding/binary"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// dropsSumPlain is dropsSum one bool and one word at a time: the plain
// reference the packed one is held to.
func dropsSumPlain(drops []bool) uint64 {
	if len(drops) == 0 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(dropsSeed())
	var word [8]byte
	for i := 0; i < len(drops); i += 64 {
		var w uint64
		for j, d := range drops[i:min(i+64, len(drops))] {
			if d {
				w |= 1 << j
			}
		}
		binary.LittleEndian.PutUint64(word[:], w)
		h.Write(word[:])
	}
	return h.Sum64()
}

// The packed sum is the plain one on patterns of every length around the
// word and batch sizes, mostly kept, mostly dropped and mixed.
func TestDropsSumAgreesWithPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	for n := range 64*32*2 + 70 {
		for _, p := range []float64{0.02, 0.5, 0.98} {
			d := make([]bool, n)
			for i := range d {
				d[i] = rng.Float64() < p
			}
			if got, want := dropsSum(d), dropsSumPlain(d); got != want {
				t.Fatalf("%d scopes, p %.2f: %x, plain %x", n, p, got, want)
			}
		}
	}
}

func BenchmarkDropsSum(b *testing.B) {
	d := make([]bool, 2300) // the large workspace's tree
	for i := range d {
		d[i] = i%3 == 0
	}
	b.Run("packed", func(b *testing.B) {
		for b.Loop() {
			dropsSum(d)
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			dropsSumPlain(d)
		}
	})
}
