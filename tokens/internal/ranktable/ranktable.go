// Package ranktable holds a byte-pair vocabulary in a form that needs no
// building at run time: a flat byte string that is read in place, so a
// table compiled into the binary with //go:embed is ready as soon as the
// process starts.
//
// Layout, all integers little-endian uint32 but the offsets, which are
// 3-byte (24-bit) little-endian:
//
//	magic "loomrnk5"
//	n       number of ranks (the largest rank + 1)
//	m       number of hash slots a probe may start at
//	offsets n+1 entries: the token of rank r is data[offsets[r]:offsets[r+1]]
//	slots   m+pad entries: 0 for an empty slot, else tag<<rankBits | rank+1
//	pairs   65536 entries: the rank of the two-byte token a,b at a<<8|b,
//	        or NoRank; most lookups while merging are of byte pairs
//	data    the tokens' bytes, in rank order
//
// The slots form an open-addressing hash table with linear probing, keyed
// by [Hash] of the token's bytes: the low 32 bits, scaled to the number of
// slots, pick the first slot, and the top tagBits are kept in the slot so
// that a probe rarely has to compare bytes that cannot match. The number of
// slots need not be a power of two, so the table can be filled to
// loadNum/loadDen (70%): a probe reads 4-byte slots that sit side by side,
// sixteen to a cache line, so the few more it reads than in a half-empty
// table cost little, while a table rounded up to a power of two would be up
// to twice as big in the binary (a megabyte more for o200k_base). The slots
// run on pad past m, the last ones empty, so that no probe wraps around.
package ranktable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

const (
	magic    = "loomrnk5"
	header   = len(magic) + 8
	rankBits = 18 // ranks below 1<<18 - 1: o200k_base has 200k
	tagBits  = 32 - rankBits
	rankMask = 1<<rankBits - 1
	pairsLen = 256 * 256 * 4
	// the most slots that are full, as a fraction
	loadNum, loadDen = 7, 10
	pad              = 256 // slots past m: probes run on instead of wrapping
)

// NoRank is what [Table.PairRank] returns for a pair that is not a token.
const NoRank = math.MaxUint32

// Table is a vocabulary read from its encoded form. The zero Table is empty.
type Table struct {
	n       int
	m       uint64 // number of home slots
	offsets string // (n+1)*3 bytes, and 5 more (of the slots) for 8-byte reads
	slots   string // (m+pad)*4 bytes
	pairs   string // pairsLen bytes
	data    string
}

// Open reads a table encoded by [Build]. It copies nothing: the table reads
// enc in place.
func Open(enc string) (*Table, error) {
	if len(enc) < header || enc[:len(magic)] != magic {
		return nil, errors.New("ranktable: not a rank table")
	}
	n := int(u32(enc, len(magic)))
	m := int(u32(enc, len(magic)+4))
	if n >= rankMask || m < 1 || m > 1<<30 {
		return nil, errors.New("ranktable: bad header")
	}
	offEnd := header + (n+1)*3
	slotEnd := offEnd + (m+pad)*4
	pairEnd := slotEnd + pairsLen
	if len(enc) < pairEnd {
		return nil, errors.New("ranktable: truncated")
	}
	t := &Table{n: n, m: uint64(m), offsets: enc[header : offEnd+5], slots: enc[offEnd:slotEnd], pairs: enc[slotEnd:pairEnd], data: enc[pairEnd:]}
	if int(u24(t.offsets, n*3)) != len(t.data) {
		return nil, errors.New("ranktable: data length does not match offsets")
	}
	if u32(t.slots, len(t.slots)-4) != 0 {
		return nil, errors.New("ranktable: the last slot is not empty")
	}
	return t, nil
}

// Len returns the number of ranks, the largest rank plus one.
func (t *Table) Len() int { return t.n }

// Token returns the bytes of rank r, "" for a rank with no token.
func (t *Table) Token(r int) string {
	v := le64(t.offsets[r*3:])
	return t.data[uint32(v)&0xffffff : uint32(v>>24)&0xffffff]
}

// Rank returns the rank of the token s, or ok false when s is not one.
func (t *Table) Rank(s string) (rank uint32, ok bool) {
	if len(s) == 2 { // a common piece, and its own table
		r := t.PairRank(s[0], s[1])
		return r, r != NoRank
	}
	h := Hash(s)
	tag := uint32(h >> (64 - tagBits))
	for i := int(home(h, t.m)) * 4; ; i += 4 {
		slot := u32(t.slots, i)
		if slot == 0 {
			return 0, false
		}
		if slot>>rankBits != tag {
			continue
		}
		r := int(slot&rankMask) - 1
		v := le64(t.offsets[r*3:]) // both 3-byte offsets in one read
		lo, hi := uint32(v)&0xffffff, uint32(v>>24)&0xffffff
		if int(hi-lo) == len(s) && t.data[lo:hi] == s {
			return uint32(r), true
		}
	}
}

// PairRank returns the rank of the two-byte token a,b, or NoRank.
func (t *Table) PairRank(a, b byte) uint32 {
	return u32(t.pairs, (int(a)<<8|int(b))*4)
}

// home returns the first slot to probe for hash h in a table of m slots:
// the low 32 bits of h scaled to [0, m) by a multiply, which needs no
// division and no power-of-two size.
func home(h, m uint64) uint64 {
	return uint64(uint32(h)) * m >> 32
}

func u24(s string, i int) uint32 {
	s = s[i : i+3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16
}

func u32(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// Build encodes a vocabulary: tokens[r] is the token of rank r, "" for a
// rank that has none. Tokens must be distinct. It also returns the longest
// probe sequence, a measure of the hash's quality on this vocabulary.
func Build(tokens []string) (enc []byte, maxProbe int, err error) {
	n := len(tokens)
	if n >= rankMask {
		return nil, 0, fmt.Errorf("ranktable: %d ranks, at most %d fit", n, rankMask-1)
	}
	count := 0
	for _, t := range tokens {
		if t != "" {
			count++
		}
	}
	m := uint64(count*loadDen/loadNum + 1)
	slots := make([]uint32, m+pad)
	offsets := make([]uint32, 0, n+1)
	var data []byte
	seen := make(map[string]bool, count)
	for r, tok := range tokens {
		offsets = append(offsets, uint32(len(data)))
		data = append(data, tok...)
		if tok == "" {
			continue
		}
		if seen[tok] {
			return nil, 0, fmt.Errorf("ranktable: token %q appears twice", tok)
		}
		seen[tok] = true
		h := Hash(tok)
		probe := 1
		i := home(h, m)
		for slots[i] != 0 {
			i++
			probe++
		}
		if int(i) >= len(slots)-1 {
			return nil, 0, fmt.Errorf("ranktable: a probe runs more than %d slots past the end; lower the load", pad)
		}
		maxProbe = max(maxProbe, probe)
		slots[i] = uint32(h>>(64-tagBits))<<rankBits | uint32(r+1)
	}
	offsets = append(offsets, uint32(len(data)))
	enc = append(enc, magic...)
	enc = binary.LittleEndian.AppendUint32(enc, uint32(n))
	enc = binary.LittleEndian.AppendUint32(enc, uint32(m))
	if len(data) >= 1<<24 {
		return nil, 0, fmt.Errorf("ranktable: %d bytes of tokens, at most %d fit", len(data), 1<<24-1)
	}
	for _, o := range offsets {
		enc = append(enc, byte(o), byte(o>>8), byte(o>>16))
	}
	for _, s := range slots {
		enc = binary.LittleEndian.AppendUint32(enc, s)
	}
	pairs := make([]uint32, 256*256)
	for i := range pairs {
		pairs[i] = NoRank
	}
	for r, tok := range tokens {
		if len(tok) == 2 {
			pairs[int(tok[0])<<8|int(tok[1])] = uint32(r)
		}
	}
	for _, p := range pairs {
		enc = binary.LittleEndian.AppendUint32(enc, p)
	}
	enc = append(enc, data...)
	return enc, maxProbe, nil
}

// Multipliers from wyhash (public domain): odd 64-bit constants with
// balanced bits.
const (
	k0 = 0xa0761d6478bd642f
	k1 = 0xe7037ed1a0b428db
	k2 = 0x8ebc6af09c88c6e3
)

// mix multiplies to 128 bits and folds the halves together, wyhash's
// mixing step: every input bit reaches every output bit.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// Hash is a 64-bit hash of s in the style of wyhash: eight bytes at a time
// go through a 64×64→128-bit multiply, the length is mixed in, and a final
// multiply spreads the result over all bits. Short keys, the usual token,
// cost one or two multiplies. It is fixed (no seed) because the tables are
// built ahead of time; it only has to spread vocabulary entries evenly.
func Hash(s string) uint64 {
	h := uint64(len(s)) ^ k0
	for len(s) > 8 {
		h = mix(le64(s)^k1, h^k2)
		s = s[8:]
	}
	var a, b uint64
	switch n := len(s); {
	case n >= 4:
		a, b = uint64(le32(s)), uint64(le32(s[n-4:]))
	case n > 0:
		a, b = uint64(s[0])<<16|uint64(s[n>>1])<<8|uint64(s[n-1]), 0
	}
	h = mix(a^k1, b^h)
	return mix(h^k2, h^k0)
}

func le64(s string) uint64 {
	s = s[:8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	s = s[:4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
