// Command retrieval evaluates how well loom finds the memories a turn
// needs, beside a recency baseline and a plain BM25 baseline computed in the
// same run, on a generated conversational dataset (see dataset.go).
//
//	go run ./bench/retrieval [-users 10] [-turns 600] [-seed 1] [-json]
//
// For each method it reports recall@5 and recall@10 (the share of
// questions with an evidence memory among the first 5 or 10 memories) and
// recall@1000 tokens (with an evidence memory among the memories the method
// puts in a 1,000-token budget, each costing its "- content" line in
// o200k_base tokens).
//
// Methods:
//
//	recency      newest memories first (what a priority selection keeps)
//	bm25         FTS5 BM25 over unstemmed words, the question's words as typed
//	loom         memory.Search over the turn (question and previous turn),
//	             then memory.RecallFor (neighbours and near-copies) for the budget
//	loom-...     loom without one of its parts, to measure each; -no-stemming
//	             is loom's query on the unstemmed index (message alone),
//	             -previous-fused and -previous-joined use the previous turn
//	             always (memory.PreviousFused, memory.PreviousJoined) instead
//	             of only when the message alone finds nothing
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	_ "modernc.org/sqlite"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/tokens"
)

// budget is the memory budget the issue measures recall within.
const budget = 1000

type result struct {
	Method   string  `json:"method"`
	At5      float64 `json:"recall_at_5"`
	At10     float64 `json:"recall_at_10"`
	AtBudget float64 `json:"recall_at_1000_tokens"`
	// FollowUpAtBudget is recall@1000 tokens on the follow-up questions
	// alone.
	FollowUpAtBudget float64 `json:"follow_up_recall_at_1000_tokens"`
	Questions        int     `json:"questions"`
	// ByKind is recall@10 per kind of question.
	ByKind map[string]float64 `json:"recall_at_10_by_kind"`
}

func main() {
	users := flag.Int("users", 10, "users (conversations)")
	turns := flag.Int("turns", 600, "chatter turns per user, before the facts")
	seed := flag.Uint64("seed", 1, "dataset seed")
	asJSON := flag.Bool("json", false, "print JSON")
	byKind := flag.Bool("kinds", false, "also print recall@10 by kind of question")
	flag.Parse()
	results, err := run(context.Background(), generate(*seed, *users, *turns))
	if err != nil {
		fmt.Fprintln(os.Stderr, "retrieval:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(results)
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "method\trecall@5\trecall@10\trecall@1000tok\tfollow-ups@1000tok\tquestions\t\n")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%d\t\n", r.Method, 100*r.At5, 100*r.At10, 100*r.AtBudget, 100*r.FollowUpAtBudget, r.Questions)
	}
	w.Flush()
	if *byKind {
		var kinds []string
		for k := range results[0].ByKind {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		fmt.Fprintf(w, "\nrecall@10 by kind\t")
		for _, r := range results {
			fmt.Fprintf(w, "%s\t", r.Method)
		}
		fmt.Fprintln(w)
		for _, k := range kinds {
			fmt.Fprintf(w, "%s\t", k)
			for _, r := range results {
				fmt.Fprintf(w, "%.0f%%\t", 100*r.ByKind[k])
			}
			fmt.Fprintln(w)
		}
		w.Flush()
	}
}

// method ranks memories for a question and fills the budget.
type method struct {
	name string
	// rank returns memories best first (at least the first 10).
	rank func(q question) ([]memory.Memory, error)
	// fill returns what enters the budget; nil fills rank's list greedily.
	fill func(q question) ([]memory.Memory, error)
}

func run(ctx context.Context, ds dataset) ([]result, error) {
	dir, err := os.MkdirTemp("", "loom-retrieval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	store, err := memory.OpenSQLite(filepath.Join(dir, "memory.db"))
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := store.Import(ctx, ds.Memories); err != nil {
		return nil, err
	}
	plain, err := newPlainIndex(filepath.Join(dir, "plain.db"), ds.Memories)
	if err != nil {
		return nil, err
	}
	defer plain.db.Close()
	counter, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		return nil, err
	}
	byUser := map[string][]memory.Memory{} // newest first
	for i := len(ds.Memories) - 1; i >= 0; i-- {
		m := ds.Memories[i]
		byUser[m.User] = append(byUser[m.User], m)
	}

	search := func(text, user string) ([]memory.Memory, error) {
		hits, err := store.Search(ctx, memory.SearchQuery{Text: text, User: user, Limit: 40})
		return hitMemories(hits), err
	}
	rankBy := func(use memory.PreviousUse) func(q question) ([]memory.Memory, error) {
		return func(q question) ([]memory.Memory, error) {
			hits, err := memory.RankTurn(ctx, store, memory.TurnQuery{Message: q.Text, Previous: q.Previous, Use: use, User: q.User, Limit: 40})
			return hitMemories(hits), err
		}
	}
	rankTurn := rankBy(memory.PreviousIfNothing)
	recallBy := func(q question, use memory.PreviousUse) ([]memory.Memory, error) {
		r := memory.RecallFor(ctx, store, memory.RecallOptions{Message: q.Text, Previous: q.Previous, PreviousUse: use, User: q.User,
			Budget: budget, Counter: counter, Neighbours: true, All: byUser[q.User]})
		var out []memory.Memory
		for _, m := range r.Memories {
			out = append(out, m.Memory)
		}
		return out, nil
	}
	recall := func(q question, previous string, neighbours, dedup bool) ([]memory.Memory, error) {
		r := memory.RecallFor(ctx, store, memory.RecallOptions{Message: q.Text, Previous: previous, User: q.User,
			Budget: budget, Counter: counter, Neighbours: neighbours, All: byUser[q.User], KeepNearCopies: !dedup})
		var out []memory.Memory
		for _, m := range r.Memories {
			out = append(out, m.Memory)
		}
		return out, nil
	}
	methods := []method{
		{name: "recency", rank: func(q question) ([]memory.Memory, error) { return byUser[q.User], nil }},
		{name: "bm25", rank: func(q question) ([]memory.Memory, error) { return plain.search(q.Text, q.User, false) }},
		{name: "loom", rank: rankTurn,
			fill: func(q question) ([]memory.Memory, error) { return recall(q, q.Previous, true, true) }},
		{name: "loom-no-stemming", rank: func(q question) ([]memory.Memory, error) { return plain.search(q.Text, q.User, true) }},
		{name: "loom-no-previous-turn", rank: func(q question) ([]memory.Memory, error) { return search(q.Text, q.User) },
			fill: func(q question) ([]memory.Memory, error) { return recall(q, "", true, true) }},
		{name: "loom-previous-fused", rank: rankBy(memory.PreviousFused),
			fill: func(q question) ([]memory.Memory, error) { return recallBy(q, memory.PreviousFused) }},
		{name: "loom-previous-joined", rank: rankBy(memory.PreviousJoined),
			fill: func(q question) ([]memory.Memory, error) { return recallBy(q, memory.PreviousJoined) }},
		{name: "loom-no-neighbours", rank: rankTurn,
			fill: func(q question) ([]memory.Memory, error) { return recall(q, q.Previous, false, true) }},
		{name: "loom-no-dedup", rank: rankTurn,
			fill: func(q question) ([]memory.Memory, error) { return recall(q, q.Previous, true, false) }},
	}
	var out []result
	for _, m := range methods {
		r := result{Method: m.name, Questions: len(ds.Questions), ByKind: map[string]float64{}}
		follow, followHit := 0, 0
		kinds := map[string]int{}
		for _, q := range ds.Questions {
			ranked, err := m.rank(q)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
			var kept []memory.Memory
			if m.fill != nil {
				if kept, err = m.fill(q); err != nil {
					return nil, fmt.Errorf("%s: %w", m.name, err)
				}
			} else {
				kept = greedy(ranked, counter)
			}
			r.At5 += hit(ranked, 5, q.Evidence)
			r.At10 += hit(ranked, 10, q.Evidence)
			r.ByKind[q.Kind] += hit(ranked, 10, q.Evidence)
			kinds[q.Kind]++
			b := hit(kept, len(kept), q.Evidence)
			r.AtBudget += b
			if q.FollowUp {
				follow++
				followHit += int(b)
			}
		}
		n := float64(len(ds.Questions))
		r.At5, r.At10, r.AtBudget = r.At5/n, r.At10/n, r.AtBudget/n
		for k, n := range kinds {
			r.ByKind[k] /= float64(n)
		}
		if follow > 0 {
			r.FollowUpAtBudget = float64(followHit) / float64(follow)
		}
		out = append(out, r)
	}
	return out, nil
}

// hit is 1 when one of the first k memories is evidence, else 0.
func hit(ms []memory.Memory, k int, evidence []string) float64 {
	for _, m := range ms[:min(k, len(ms))] {
		if slices.Contains(evidence, m.ID) {
			return 1
		}
	}
	return 0
}

// greedy takes memories in order while their lines fit in the budget,
// passing over one that does not.
func greedy(ms []memory.Memory, c memory.Counter) []memory.Memory {
	left := budget
	var out []memory.Memory
	for _, m := range ms {
		if n := c.Count(memory.Line(m)); n <= left {
			left -= n
			out = append(out, m)
		}
	}
	return out
}

func hitMemories(hs []memory.Hit) []memory.Memory {
	out := make([]memory.Memory, len(hs))
	for i, h := range hs {
		out[i] = h.Memory
	}
	return out
}

// plainIndex is the baseline: an FTS5 table over the same memories with
// the unicode61 tokenizer (no stemming) and BM25 over content alone.
type plainIndex struct {
	db   *sql.DB
	byID map[string]memory.Memory
}

func newPlainIndex(path string, ms []memory.Memory) (*plainIndex, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, err
	}
	p := &plainIndex{db: db, byID: map[string]memory.Memory{}}
	if _, err := db.Exec(`CREATE VIRTUAL TABLE plain USING fts5(id UNINDEXED, user UNINDEXED, content, tokenize='unicode61')`); err != nil {
		return nil, err
	}
	tx, err := db.Begin()
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		p.byID[m.ID] = m
		if _, err := tx.Exec(`INSERT INTO plain (id, user, content) VALUES (?, ?, ?)`, m.ID, m.User, m.Content); err != nil {
			return nil, err
		}
	}
	return p, tx.Commit()
}

// search ranks by BM25. With loomTerms the query is loom's terms (stop
// words left out); without, every word of the text as typed.
func (p *plainIndex) search(text, user string, loomTerms bool) ([]memory.Memory, error) {
	var words []string
	if loomTerms {
		words = memory.Terms(text)
	} else {
		words = strings.FieldsFunc(text, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 127)
		})
	}
	if len(words) == 0 {
		return nil, nil
	}
	for i, w := range words {
		words[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	rows, err := p.db.Query(`SELECT id FROM plain WHERE plain MATCH ? AND user = ? ORDER BY rank LIMIT 40`, strings.Join(words, " OR "), user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memory.Memory
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, p.byID[id])
	}
	return out, rows.Err()
}
