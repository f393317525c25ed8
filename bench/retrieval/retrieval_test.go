package main

import (
	"context"
	"strings"
	"testing"

	"github.com/loomctx/loom/memory"
)

// Every question has evidence, and its evidence says what the question
// asks about (checked by hand for each kind: the answer's key word is in
// the evidence turn).
func TestDataset(t *testing.T) {
	ds := generate(1, 3, 120)
	byID := map[string]memory.Memory{}
	for _, m := range ds.Memories {
		byID[m.ID] = m
	}
	if len(ds.Questions) != 3*(len(facts)+2) {
		t.Fatalf("%d questions, want %d", len(ds.Questions), 3*(len(facts)+2))
	}
	for _, q := range ds.Questions {
		if len(q.Evidence) == 0 {
			t.Errorf("%s %q has no evidence", q.User, q.Text)
		}
		for _, id := range q.Evidence {
			m, ok := byID[id]
			if !ok || m.User != q.User {
				t.Errorf("%q: evidence %s is not the user's memory", q.Text, id)
			}
		}
	}
	// The move: the answer is the newest statement of where they live.
	for _, q := range ds.Questions {
		if q.Kind == "home" && !strings.Contains(byID[q.Evidence[0]].Content, "finally moved") {
			t.Errorf("home evidence: %q", byID[q.Evidence[0]].Content)
		}
	}
	if a, b := generate(1, 2, 50), generate(1, 2, 50); len(a.Memories) != len(b.Memories) || a.Memories[17] != b.Memories[17] || a.Questions[5].Text != b.Questions[5].Text {
		t.Error("the same seed made another dataset")
	}
}

func TestHit(t *testing.T) {
	ms := []memory.Memory{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	for _, tc := range []struct {
		k    int
		ev   []string
		want float64
	}{{1, []string{"a"}, 1}, {2, []string{"c"}, 0}, {3, []string{"x", "c"}, 1}, {10, []string{"x"}, 0}} {
		if got := hit(ms, tc.k, tc.ev); got != tc.want {
			t.Errorf("hit(k=%d, %v) = %v", tc.k, tc.ev, got)
		}
	}
}

// A small run: the recency baseline finds little and loom more than the
// plain BM25 baseline within the budget, as in the full run.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two indexes")
	}
	rs, err := run(context.Background(), generate(2, 3, 200))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]result{}
	for _, r := range rs {
		got[r.Method] = r
		if r.At5 > r.At10 || r.At10 > 1 || r.AtBudget > 1 {
			t.Errorf("%s: %+v", r.Method, r)
		}
	}
	if got["recency"].AtBudget >= got["bm25"].AtBudget || got["bm25"].AtBudget >= got["loom"].AtBudget {
		t.Errorf("recall within the budget: recency %.2f, bm25 %.2f, loom %.2f", got["recency"].AtBudget, got["bm25"].AtBudget, got["loom"].AtBudget)
	}
}
