package memory

import (
	"bufio"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/memory"
)

func newCmdSearch(opts *Options) *cobra.Command {
	c := &cobra.Command{
		Use:   "search [flags] QUERY",
		Short: "List the memories most relevant to QUERY, best first",
		Long: `List the active memories most relevant to QUERY, best first, with their
scores: a full-text ranking (BM25 over stemmed words) in the store itself.
QUERY is plain text; quotes, *, NEAR and the like are words, never search
syntax. With --user, search that user's memories and the workspace-wide ones;
without it, the workspace-wide ones only. A QUERY with no searchable word
(only stop words or punctuation) finds nothing.

--json prints a list of {id, content, category, user, score}.`,
		Example: `  loom memory search "where does Ana's sister live?"
  loom memory search --user ana --limit 5 --json "marathon training"
  loom memory search --example assistant --json ferry`,
		Args: cobra.MinimumNArgs(1),
	}
	c.Flags().StringVar(&opts.User, "user", "", "search this user's and the workspace-wide memories")
	c.Flags().IntVar(&opts.Limit, "limit", memory.DefaultSearchLimit, fmt.Sprintf("most memories listed (1 to %d)", memory.MaxSearchLimit))
	cmdutil.AddJSONFlag(c.Flags(), &opts.JSON)
	return c
}

// searchResult is one line of `loom memory search --json`.
type searchResult struct {
	ID       string  `json:"id"`
	Content  string  `json:"content"`
	Category string  `json:"category"`
	User     string  `json:"user"`
	Score    float64 `json:"score"`
}

func searchRun(opts *Options) error {
	if opts.Limit < 1 || opts.Limit > memory.MaxSearchLimit {
		return cmdutil.FlagErrorf("--limit %d: want 1 to %d", opts.Limit, memory.MaxSearchLimit)
	}
	s, err := openStore(opts, true)
	if err != nil {
		return err
	}
	var hits []memory.Hit
	if s != nil {
		defer s.Close()
		searcher, ok := s.(memory.Searcher)
		if !ok {
			return fmt.Errorf("this memory store cannot search")
		}
		hits, err = searcher.Search(context.Background(), memory.SearchQuery{Text: opts.Text, User: opts.User, Limit: opts.Limit})
		if err != nil {
			return err
		}
	}
	if opts.JSON {
		out := make([]searchResult, len(hits))
		for i, h := range hits {
			out[i] = searchResult{ID: h.ID, Content: h.Content, Category: h.Category, User: h.User, Score: h.Score}
		}
		return jsonout.Write(opts.IO.Out, out)
	}
	w := bufio.NewWriter(opts.IO.Out)
	for _, h := range hits {
		fmt.Fprintf(w, "%s  %.3f  %s", h.ID, h.Score, h.Category)
		if h.User != "" {
			fmt.Fprintf(w, "  user=%s", h.User)
		}
		fmt.Fprintf(w, "\n    %s\n", h.Content)
	}
	return w.Flush()
}
