package session

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// containsByEnd answers as bytes.Contains, on random texts over a small
// alphabet (so partial matches abound) and on a session file's tail.
func TestContainsByEndAgreesWithContains(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = `"ab:`[r.IntN(4)]
		}
		return b
	}
	found := 0
	for range 20_000 {
		s := text(r.IntN(300))
		var sub []byte
		if len(s) > 0 && r.IntN(2) == 0 { // a piece of s, found
			i := r.IntN(len(s))
			sub = bytes.Clone(s[i : i+r.IntN(len(s)-i+1)])
		} else if len(s) > 40 && r.IntN(2) == 0 { // its end in s, its start maybe not
			i := r.IntN(len(s) - 32)
			sub = append(text(1+r.IntN(8)), s[i:i+32]...)
		} else {
			sub = text(r.IntN(80))
		}
		want := bytes.Contains(s, sub)
		if got := containsByEnd(s, sub); got != want {
			t.Fatalf("containsByEnd(%q, %q) = %v, bytes.Contains says %v", s, sub, got, want)
		}
		if want && len(sub) > 32 {
			found++
		}
	}
	if found < 1000 {
		t.Fatalf("only %d long needles found: the test does not reach the split search", found)
	}
	line := []byte(`{"role":"user","content":"hi","extra":{"` + TurnKey + `":"resp_6265_0123456789abcdef"}}` + "\n")
	tail := bytes.Repeat([]byte(`{"role":"assistant","content":"\"quoted\""}`+"\n"), 500)
	marker := []byte(`"` + TurnKey + `":"resp_6265_0123456789abcdef"`)
	if containsByEnd(tail, marker) || !containsByEnd(append(tail, line...), marker) || !containsByEnd(append(line, tail...), marker) {
		t.Fatal("the turn key marker is not found where it is, or found where it is not")
	}
}
