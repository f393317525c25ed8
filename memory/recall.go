package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// RecallOptions ask for the memories relevant to one turn.
type RecallOptions struct {
	// Message is the current message; Previous is the turn before it
	// (the user's last message and the reply), which can give a short
	// follow-up ("and her sister?") its subject. How Previous is used is
	// PreviousUse; see [RankTurn].
	Message, Previous string
	PreviousUse       PreviousUse
	// User is the scope, as in [Query].
	User string
	// Budget is the token budget of the recalled memories' lines.
	Budget  int
	Counter Counter
	// Shown are the memories the system prompt already holds: they are
	// not recalled again, nor is a near-copy of one.
	Shown []Memory
	// Pool gives what a fallback chooses from, in priority order: the
	// memories the system prompt left out for length. A recall falls back
	// to it when the query has no searchable word or matches nothing, or
	// when the search fails; it is called only then. Nil is an empty pool.
	Pool func() []Memory
	// ExcludeChat leaves out memories of this chat, as the prompt does.
	ExcludeChat string
	// Neighbours adds, after each memory found, the memories written just
	// before and after it in the same chat (from All), which often hold
	// the question it answers or the rest of what was said.
	Neighbours bool
	// All is every active memory of the scope, newest first (a store's
	// List); Neighbours needs it.
	All []Memory
	// Chats, when set, is All grouped by chat (see [ByChat]), which a
	// caller that recalls from the same listing many times keeps.
	Chats map[string][]Memory
	// KeepNearCopies turns off the leaving out of near-copies; the
	// evaluation in bench/retrieval sets it to measure what that gives.
	KeepNearCopies bool
	// Similar, when set, ranks the scope's memories by meaning
	// (memory.embeddings; see package embedding). The recall fuses that
	// ranking with the ranking by words by reciprocal rank, and Why says
	// which found each memory. If it fails, the recall is by words
	// alone and Recall.Ranking says why.
	Similar SimilarFunc
}

// SimilarFunc returns up to limit memories nearest in meaning to text,
// best first, Score being their cosine.
type SimilarFunc func(ctx context.Context, text string, limit int) ([]Hit, error)

// Recalled is one memory a recall chose, with its score and why.
type Recalled struct {
	Memory Memory  `json:"memory"`
	Score  float64 `json:"score"`
	// Why says how it was chosen: the words it matched, the memory it
	// sits next to, or the fallback's priority order.
	Why    string `json:"why"`
	Tokens int    `json:"tokens"`
}

// Recall is the memories chosen for one turn beside the current message:
// data for the turn's runtime block and for the report.
type Recall struct {
	// Memories are the chosen memories, best first.
	Memories []Recalled `json:"memories"`
	// Terms are the words searched for; empty when the turn had none.
	Terms  []string `json:"terms"`
	Budget int      `json:"budget"`
	Tokens int      `json:"tokens"`
	// Fallback, when set, says why the memories were chosen by priority
	// instead of relevance.
	Fallback string `json:"fallback,omitempty"`
	// Ranking, set only when the recall could rank by meaning too
	// (RecallOptions.Similar), says whether it did: RankingFused, or
	// "words only: " and why not.
	Ranking string `json:"ranking,omitempty"`
}

// RankingFused is Recall.Ranking when the ranking by words and the
// ranking by meaning were fused.
const RankingFused = "words and meaning"

// rankingWordsOnly starts Recall.Ranking when the ranking by meaning
// failed.
const rankingWordsOnly = "words only: "

// Lines are the recalled memories as the runtime block shows them.
func (r *Recall) Lines() []string {
	if r == nil {
		return nil
	}
	out := make([]string, len(r.Memories))
	for i, m := range r.Memories {
		out[i] = m.Memory.Content
	}
	return out
}

// recallCandidates is how many hits a recall asks the store for: more
// than a budget holds, so that what is shown, a near-copy or over budget
// can be passed over.
const recallCandidates = 40

// Fallback reasons.
const (
	FallbackNoTerms   = "the message has no searchable words"
	FallbackNoMatch   = "no memory matched the message"
	fallbackSearchErr = "the search failed: "
)

// RecallFor chooses, within o.Budget, the memories most relevant to the
// turn: the best hits of s for the turn's terms, passing over memories
// already shown, near-copies (see [NearCopy]), memories of o.ExcludeChat
// and lines that do not fit. It never fails: a turn with no searchable
// word, no match or a failed search falls back to o.Pool's priority
// order, and Fallback says why. s may be nil (no store that searches),
// which is a failed search.
func RecallFor(ctx context.Context, s Searcher, o RecallOptions) Recall {
	rec := Recall{Budget: max(o.Budget, 0), Terms: appendTerms(Terms(o.Message), o.Previous, MaxQueryTerms)}
	if rec.Terms == nil {
		rec.Terms = []string{}
	}
	f := filler{rec: &rec, o: o, left: rec.Budget}
	for _, m := range o.Shown {
		f.seen = append(f.seen, wordSet(m.Content))
	}
	if rec.Budget == 0 {
		return rec
	}
	var (
		similar    []Hit
		similarErr error
		similarEnd chan struct{}
	)
	if o.Similar != nil {
		if strings.TrimSpace(o.Message) == "" {
			rec.Ranking = rankingWordsOnly + "the message is empty"
		} else {
			// The endpoint's round trip overlaps the search by words.
			similarEnd = make(chan struct{})
			go func() {
				defer close(similarEnd)
				similar, similarErr = o.Similar(ctx, o.Message, recallCandidates)
			}()
		}
	}
	var hits []Hit
	var err error
	switch {
	case len(rec.Terms) == 0:
		rec.Fallback = FallbackNoTerms
	case s == nil:
		rec.Fallback = fallbackSearchErr + "the memory store cannot search"
	default:
		hits, err = RankTurn(ctx, s, TurnQuery{Message: o.Message, Previous: o.Previous, Use: o.PreviousUse, User: o.User, Limit: recallCandidates})
		switch {
		case err != nil:
			rec.Fallback = fallbackSearchErr + err.Error()
		case len(hits) == 0:
			rec.Fallback = FallbackNoMatch
		}
	}
	var (
		near    map[string]float64 // cosine of the hits found by meaning
		byWords map[string]bool    // hits found by words, when fused
	)
	if similarEnd != nil {
		<-similarEnd
		near, byWords = map[string]float64{}, map[string]bool{}
		switch {
		case similarErr != nil:
			rec.Ranking = rankingWordsOnly + similarErr.Error()
		default:
			rec.Ranking = RankingFused
			for _, h := range similar {
				near[h.ID] = h.Score
			}
			if len(similar) > 0 {
				if rec.Fallback != "" {
					hits = nil // a failed search by words is left out
				}
				rec.Fallback = ""
				for _, h := range hits {
					byWords[h.ID] = true
				}
				// The fused score stands for both rankings: a
				// memory's BM25 score and cosine do not compare.
				var scores []float64
				hits, scores = fuseHits(recallCandidates, hits, similar)
				for i := range hits {
					hits[i].Score = scores[i]
				}
			}
		}
	}
	if rec.Fallback != "" {
		if o.Pool != nil {
			for _, m := range o.Pool() {
				f.offer(m, 0, "priority order ("+rec.Fallback+")")
			}
		}
		return rec
	}
	chats := o.Chats
	if o.Neighbours && chats == nil {
		chats = ByChat(o.All)
	}
	for _, h := range hits {
		why := "no word shown"
		if len(h.Matched) > 0 {
			why = "matched " + strings.Join(h.Matched, ", ")
		}
		if cos, ok := near[h.ID]; ok {
			meaning := fmt.Sprintf("close in meaning (cosine %.3f)", cos)
			if byWords[h.ID] {
				why += "; " + meaning
			} else {
				why = meaning
			}
		}
		if !f.offer(h.Memory, h.Score, why) || chats == nil {
			continue
		}
		for _, n := range neighbours(chats[h.Chat], h.ID) {
			f.offer(n, h.Score/2, fmt.Sprintf("next to %s in chat %s", h.ID, h.Chat))
		}
	}
	return rec
}

// PreviousUse says how a turn's search uses the previous turn.
type PreviousUse int

const (
	// PreviousIfNothing searches the message alone, and the message with
	// the previous turn's words only when the message alone finds
	// nothing. It is the default: in bench/retrieval it kept the most
	// evidence within the budget, as a previous turn's words mostly
	// crowd out the hits of a message that stands on its own.
	PreviousIfNothing PreviousUse = iota
	// PreviousFused searches both and fuses the rankings by reciprocal
	// rank (1/(60+rank) from each).
	PreviousFused
	// PreviousJoined searches the message's words and the previous
	// turn's as one query.
	PreviousJoined
)

// TurnQuery asks for the memories one turn is about.
type TurnQuery struct {
	Message, Previous string
	Use               PreviousUse
	User              string
	Limit             int
}

// RankTurn ranks the memories of q.User's scope for a turn, best first,
// at most q.Limit, using the previous turn as q.Use says. A fused hit
// keeps the score and matched words of the search that ranked it higher.
func RankTurn(ctx context.Context, s Searcher, q TurnQuery) ([]Hit, error) {
	own := Terms(q.Message)
	both := appendTerms(slices.Clone(own), q.Previous, MaxQueryTerms)
	search := func(terms []string) ([]Hit, error) {
		return s.Search(ctx, SearchQuery{Text: strings.Join(terms, " "), User: q.User, Limit: q.Limit})
	}
	if q.Use == PreviousJoined || len(own) == 0 {
		return search(both)
	}
	hits, err := search(own)
	if err != nil || len(both) == len(own) {
		return hits, err
	}
	if q.Use == PreviousIfNothing {
		if len(hits) > 0 {
			return hits, nil
		}
		return search(both)
	}
	more, err := search(both)
	if err != nil {
		return nil, err
	}
	fused, _ := fuseHits(q.Limit, hits, more)
	return fused, nil
}

// fuseHits fuses rankings by reciprocal rank: a hit scores 1/(60+rank)
// in each list that has it (rank from 1), best total first, ties by the
// best rank reached; at most limit. A fused hit keeps the score and
// matched words it had in the list that ranked it highest (the first
// such list); scores are the fused scores, in the same order.
func fuseHits(limit int, lists ...[]Hit) (hits []Hit, scores []float64) {
	type fused struct {
		hit   Hit
		score float64
		first int // best rank, for a stable order
	}
	byID := map[string]*fused{}
	var order []*fused
	for _, l := range lists {
		for r, h := range l {
			f := byID[h.ID]
			if f == nil {
				f = &fused{hit: h, first: r}
				byID[h.ID] = f
				order = append(order, f)
			}
			f.score += 1 / float64(60+r+1)
			if r < f.first {
				f.hit, f.first = h, r
			}
		}
	}
	slices.SortStableFunc(order, func(a, b *fused) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.first - b.first
	})
	hits = make([]Hit, 0, min(limit, len(order)))
	for _, f := range order[:min(limit, len(order))] {
		hits = append(hits, f.hit)
		scores = append(scores, f.score)
	}
	return hits, scores
}

// filler takes memories into a recall while they fit.
type filler struct {
	rec  *Recall
	o    RecallOptions
	left int
	ids  map[string]bool
	seen []map[string]bool // word sets of shown and chosen memories
}

// offer takes m if it is new, not a near-copy, not of the excluded chat,
// and fits; it reports whether m was taken.
func (f *filler) offer(m Memory, score float64, why string) bool {
	if f.ids == nil {
		f.ids = map[string]bool{}
		for _, s := range f.o.Shown {
			f.ids[s.ID] = true
		}
	}
	if f.ids[m.ID] || (f.o.ExcludeChat != "" && m.Chat == f.o.ExcludeChat) || m.SupersededBy != "" || m.Forgotten {
		return false
	}
	words := wordSet(m.Content)
	for _, s := range f.seen {
		if !f.o.KeepNearCopies && nearCopy(words, s) {
			return false
		}
	}
	n := f.o.Counter.Count(Line(m))
	if n > f.left {
		return false
	}
	f.left -= n
	f.ids[m.ID] = true
	f.seen = append(f.seen, words)
	f.rec.Tokens += n
	f.rec.Memories = append(f.rec.Memories, Recalled{Memory: m, Score: score, Why: why, Tokens: n})
	return true
}

// wordSet is the set of a text's words, stop words included, lower-cased.
func wordSet(text string) map[string]bool {
	ws := appendTerms(nil, text, 1<<20)
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// NearCopyJaccard is how alike two memories' word sets must be (shared
// words over all words, stop words aside) for the second to be a near-copy
// of the first, which a recall leaves out: the same fact written twice
// says nothing new and takes budget.
const NearCopyJaccard = 0.8

// NearCopy says whether b is a near-copy of a.
func NearCopy(a, b string) bool { return nearCopy(wordSet(a), wordSet(b)) }

func nearCopy(a, b map[string]bool) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	shared := 0
	for w := range a {
		if b[w] {
			shared++
		}
	}
	return float64(shared) >= NearCopyJaccard*float64(len(a)+len(b)-shared)
}

// ByChat groups memories (newest first, as List gives them) by chat,
// oldest first within each.
func ByChat(all []Memory) map[string][]Memory {
	m := map[string][]Memory{}
	for i := len(all) - 1; i >= 0; i-- { // all is newest first
		if c := all[i].Chat; c != "" {
			m[c] = append(m[c], all[i])
		}
	}
	for _, ms := range m {
		slices.SortStableFunc(ms, func(a, b Memory) int { return a.CreatedAt.Compare(b.CreatedAt) })
	}
	return m
}

// neighbours are the memories just before and after id in its chat.
func neighbours(chat []Memory, id string) []Memory {
	i := slices.IndexFunc(chat, func(m Memory) bool { return m.ID == id })
	if i < 0 {
		return nil
	}
	var out []Memory
	if i > 0 {
		out = append(out, chat[i-1])
	}
	if i+1 < len(chat) {
		out = append(out, chat[i+1])
	}
	return out
}
