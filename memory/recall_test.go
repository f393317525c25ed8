package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRecallFor(t *testing.T) {
	s := openSearchStore(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := []Memory{
		{ID: "q", Content: "Assistant: What do you do on weekends?", Chat: "c1"},
		{ID: "a", Content: "Ana: Mostly bouldering with friends.", Chat: "c1"},
		{ID: "x", Content: "Ana: The weather was grey.", Chat: "c1"},
		{ID: "s1", Content: "Ana's sister lives in Porto."},
		{ID: "s2", Content: "Ana's sister lives in Porto!"}, // near-copy of s1
		{ID: "r", Content: "Always answer briefly."},
		{ID: "o", Content: "Ana's sister visited last weekend.", Chat: "other"},
	}
	for i := range ms {
		ms[i].Category, ms[i].User, ms[i].CreatedAt = "personal_fact", "ana", t0.Add(time.Duration(i)*time.Minute)
	}
	if err := s.Import(ctx, ms); err != nil {
		t.Fatal(err)
	}
	all, err := s.List(ctx, Query{User: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(r Recall) string {
		var out []string
		for _, m := range r.Memories {
			out = append(out, m.Memory.ID)
		}
		return strings.Join(out, " ")
	}
	base := RecallOptions{User: "ana", Budget: 1000, Counter: byteCounter{}, All: all, Neighbours: true}

	// The hit, then its neighbours in the same chat; the near-copy and
	// the excluded chat's memory are left out.
	o := base
	o.Message, o.ExcludeChat = "What does she do on weekends?", "other"
	r := RecallFor(ctx, s, o)
	// q opens chat c1, so its only neighbour is the answer after it.
	if got := ids(r); got != "q a" {
		t.Errorf("weekends: %q, want q then its neighbour a", got)
	}
	if r.Fallback != "" || r.Memories[0].Why != "matched weekends" || r.Memories[1].Why != "next to q in chat c1" || r.Memories[1].Score != r.Memories[0].Score/2 {
		t.Errorf("weekends: %+v", r)
	}
	o.Message = "Where does her sister live?"
	if got := ids(RecallFor(ctx, s, o)); got != "s2" && got != "s1" {
		t.Errorf("sister: %q, want one of s1, s2", got)
	}
	o.KeepNearCopies = true
	if got := ids(RecallFor(ctx, s, o)); len(strings.Fields(got)) != 2 {
		t.Errorf("sister with near-copies: %q", got)
	}

	// Shown memories are not recalled; the budget holds; lines that do
	// not fit are passed over.
	o = base
	o.Message, o.Shown = "sister weekends", []Memory{ms[3]}
	o.Budget = len(Line(ms[0])) + len(Line(ms[1]))
	r = RecallFor(ctx, s, o)
	if r.Tokens > o.Budget || strings.Contains(ids(r), "s1") || strings.Contains(ids(r), "s2") {
		t.Errorf("budget %d: %q, %d tokens", o.Budget, ids(r), r.Tokens)
	}

	// No searchable word, no match, a failing store: priority order.
	o = base
	o.Pool = func() []Memory { return []Memory{ms[5], ms[3]} }
	for msg, want := range map[string]string{"??? the of": FallbackNoTerms, "zeppelin": FallbackNoMatch} {
		o.Message = msg
		r = RecallFor(ctx, s, o)
		if r.Fallback != want || ids(r) != "r s1" || !strings.HasPrefix(r.Memories[0].Why, "priority order") {
			t.Errorf("%q: fallback %q, %q", msg, r.Fallback, ids(r))
		}
	}
	o.Message = "sister"
	r = RecallFor(ctx, failing{}, o)
	if !strings.HasPrefix(r.Fallback, "the search failed: ") || ids(r) != "r s1" {
		t.Errorf("failing store: %q, %q", r.Fallback, ids(r))
	}
	o.Budget = 0
	if r := RecallFor(ctx, s, o); len(r.Memories) != 0 {
		t.Errorf("zero budget: %q", ids(r))
	}
}

type failing struct{}

func (failing) Search(context.Context, SearchQuery) ([]Hit, error) {
	return nil, errors.New("disk on fire")
}

// A previous turn is searched only when the message alone finds nothing,
// unless asked otherwise.
func TestRankTurnPrevious(t *testing.T) {
	s := openSearchStore(t)
	for _, c := range []string{"Lena lives in Porto", "The city library opens late", "Lena is my sister"} {
		if _, err := s.Add(ctx, NewMemory{Category: "personal_fact", Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	rank := func(msg string, use PreviousUse) string {
		hits, err := RankTurn(ctx, s, TurnQuery{Message: msg, Previous: "What is my sister called? Lena.", Use: use, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.Content)
		}
		return strings.Join(out, " | ")
	}
	if got := rank("which city?", PreviousIfNothing); got != "The city library opens late" {
		t.Errorf("if nothing, with a hit: %q", got)
	}
	if got := rank("zeppelin?", PreviousIfNothing); !strings.Contains(got, "Lena") {
		t.Errorf("if nothing, without a hit: %q", got)
	}
	if got := rank("which city?", PreviousFused); !strings.HasPrefix(got, "The city library") || !strings.Contains(got, "Lena") {
		t.Errorf("fused: %q", got)
	}
	if got := rank("which city?", PreviousJoined); !strings.Contains(got, "Lena") {
		t.Errorf("joined: %q", got)
	}
}

// RecallFor with a ranking by meaning: fused by reciprocal rank with the
// ranking by words, each memory's why naming the ranking(s) that found
// it; a failed ranking by meaning leaves the recall to words, unchanged,
// and says why.
func TestRecallForFusesMeaning(t *testing.T) {
	s := openSearchStore(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := []Memory{
		{ID: "w", Content: "The car park shuts on Sundays."},
		{ID: "m", Content: "Ana bought a blue automobile."},
		{ID: "b", Content: "Ana's car is red; she bought it in May."},
		{ID: "z", Content: "Ana plays the cello."},
	}
	for i := range ms {
		ms[i].Category, ms[i].User, ms[i].CreatedAt = "personal_fact", "ana", t0.Add(time.Duration(i)*time.Minute)
	}
	if err := s.Import(ctx, ms); err != nil {
		t.Fatal(err)
	}
	byID := map[string]Memory{}
	all, _ := s.List(ctx, Query{User: "ana"})
	for _, m := range all {
		byID[m.ID] = m
	}
	similar := func(ids ...string) SimilarFunc {
		return func(_ context.Context, text string, limit int) ([]Hit, error) {
			var out []Hit
			for i, id := range ids {
				out = append(out, Hit{Memory: byID[id], Score: 0.9 - 0.1*float64(i)})
			}
			return out, nil
		}
	}
	why := func(r Recall) string {
		var out []string
		for _, m := range r.Memories {
			out = append(out, m.Memory.ID+": "+m.Why)
		}
		return strings.Join(out, " | ")
	}
	o := RecallOptions{User: "ana", Budget: 1000, Counter: byteCounter{}, Message: "Which car is red?"}
	words := RecallFor(ctx, s, o)
	if words.Ranking != "" || why(words) != "b: matched car, red | w: matched car" {
		t.Fatalf("by words: %s (ranking %q)", why(words), words.Ranking)
	}

	// Fused: b is first in both lists, m only by meaning (rank 2), w only
	// by words (rank 2): 1/61+1/61 for b, 1/62 for each of the others,
	// the tie kept in the order first seen (words first).
	o.Similar = similar("b", "m", "z")
	r := RecallFor(ctx, s, o)
	want := "b: matched car, red; close in meaning (cosine 0.900) | w: matched car | m: close in meaning (cosine 0.800) | z: close in meaning (cosine 0.700)"
	if r.Ranking != RankingFused || why(r) != want {
		t.Errorf("fused:\n got %s\nwant %s", why(r), want)
	}
	if s0, s1 := r.Memories[0].Score, r.Memories[1].Score; s0 != 2.0/61 || s1 != 1.0/62 {
		t.Errorf("fused scores %v, %v; want 2/61 and 1/62", s0, s1)
	}

	// Failed: the recall by words, as without, and why.
	o.Similar = func(context.Context, string, int) ([]Hit, error) { return nil, errors.New("boom") }
	r = RecallFor(ctx, s, o)
	if r.Ranking != "words only: boom" || why(r) != why(words) {
		t.Errorf("failed: %s (ranking %q)", why(r), r.Ranking)
	}

	// No word to search: the ranking by meaning alone, not the fallback.
	o.Similar, o.Message = similar("m"), "¿?"
	r = RecallFor(ctx, s, o)
	if r.Fallback != "" || why(r) != "m: close in meaning (cosine 0.900)" {
		t.Errorf("no words: %s (fallback %q)", why(r), r.Fallback)
	}
	o.Message = "  "
	if r = RecallFor(ctx, s, o); r.Ranking != "words only: the message is empty" {
		t.Errorf("empty message: ranking %q", r.Ranking)
	}
}
