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
