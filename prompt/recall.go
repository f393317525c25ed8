package prompt

import (
	"context"
	"sync"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/memory"
)

// RecallShare is the part of a memory budget that memory.retrieval:
// relevant keeps for the memories recalled per turn: half. The other half
// holds the priority selection in the system prompt, which then stays the
// same from turn to turn.
func RecallShare(budget int) int { return budget / 2 }

// recallPlan is what a render leaves for [Builder.Recall].
type recallPlan struct {
	sel         *memory.Selection
	list        []memory.Memory // the scope's active memories, newest first
	dbPath      string          // "" when they came from the memory source
	budget      int             // tokens left for recalled memories
	user        string
	counter     memory.Counter
	excludeChat string
	// chats groups list by chat once, for every recall on this render.
	chats func() map[string][]memory.Memory
	// embeddings is loom.yaml's memory.embeddings; nil without.
	embeddings *config.EmbeddingsConfig
}

// planRecall keeps, when loom.yaml asks for memory.retrieval: relevant,
// what a recall for this render needs.
func (st *state) planRecall() {
	if st.memories == nil || !st.cfg.Memory.Relevant() {
		return
	}
	p := &recallPlan{sel: st.memories, list: st.memList, dbPath: st.memDB,
		budget: max(st.memBudget-st.memories.Tokens, 0), user: st.opts.User, counter: st.counter,
		embeddings: st.cfg.Memory.Embeddings}
	if st.opts.ChatID != "" && st.cfg.Memory.ExcludesCurrentChat() {
		p.excludeChat = st.opts.ChatID
	}
	list := st.memList
	p.chats = sync.OnceValue(func() map[string][]memory.Memory { return memory.ByChat(list) })
	st.recall = p
}

// Recall chooses the memories relevant to one turn (the current message,
// and the previous turn's text: the user's last message and the reply) for
// the turn's runtime block, within what res's memory budget left: the
// memories res's system prompt holds are not chosen again, so the system
// prompt stays byte for byte the same whatever the turn is about. It
// returns nil when loom.yaml's memory.retrieval is not relevant (or the
// render had no memories); it never fails the turn: a store that cannot
// search, a failed search or a message with no searchable word falls back
// to priority order, and the result says why (see [memory.RecallFor]).
func (b *Builder) Recall(ctx context.Context, res *Result, message, previous string) *memory.Recall {
	if res == nil || res.recall == nil {
		return nil
	}
	p := res.recall
	var shown []memory.Memory
	for _, g := range p.sel.Groups {
		shown = append(shown, g.Memories...)
	}
	pool := func() []memory.Memory {
		var out []memory.Memory
		for _, lo := range p.sel.LeftOut {
			if lo.Reason == memory.ReasonBudget {
				out = append(out, *lo.Memory)
			}
		}
		return out
	}
	s := b.searcher(p)
	r := memory.RecallFor(ctx, s, memory.RecallOptions{
		Message: message, Previous: previous, User: p.user, Budget: p.budget, Counter: p.counter,
		Shown: shown, Pool: pool, ExcludeChat: p.excludeChat, Neighbours: true, All: p.list, Chats: p.chats(),
		Similar: b.similar(p, s),
	})
	return &r
}

// searcher is the store the plan's memories came from, if it searches.
func (b *Builder) searcher(p *recallPlan) memory.Searcher {
	if p.dbPath == "" {
		s, _ := b.memorySource().(memory.Searcher)
		return s
	}
	store, err := b.openStore(p.dbPath)
	if err != nil {
		return nil
	}
	s, _ := store.(memory.Searcher)
	return s
}
