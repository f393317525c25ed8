package prompt

import (
	"context"
	"errors"
	"sync"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/embedding"
	"github.com/loomctx/loom/memory"
)

// embedderSlot holds the builder's embedder for loom.yaml's
// memory.embeddings, made on the first recall that needs it.
//
// Key: the memory.embeddings settings it was made from. Invalidated: a
// recall with other settings (loom.yaml changed) closes it and makes
// another; Close closes it.
type embedderSlot struct {
	mu   sync.Mutex
	cfg  config.EmbeddingsConfig
	emb  *embedding.Embedder
	err  error // why cfg gave no embedder
	open bool  // cfg, emb and err are set
}

// get returns the embedder of cfg, making it (and closing the one of
// other settings) when needed.
func (s *embedderSlot) get(cfg config.EmbeddingsConfig) (*embedding.Embedder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open && s.cfg == cfg {
		return s.emb, s.err
	}
	if s.emb != nil {
		s.emb.Close()
	}
	s.cfg, s.open = cfg, true
	s.emb, s.err = embedding.New(cfg, nil)
	return s.emb, s.err
}

// notify wakes the worker, if there is one, after a write.
func (s *embedderSlot) notify() {
	s.mu.Lock()
	e := s.emb
	s.mu.Unlock()
	if e == nil {
		return
	}
	if w := e.Worker(); w != nil {
		w.Notify()
	}
}

// stats is the embedding worker's counts, and false when no worker runs.
func (s *embedderSlot) stats() (embedding.Stats, bool) {
	s.mu.Lock()
	e := s.emb
	s.mu.Unlock()
	if e == nil {
		return embedding.Stats{}, false
	}
	w := e.Worker()
	if w == nil {
		return embedding.Stats{}, false
	}
	return w.Stats(), true
}

// EmbeddingStats is what the builder's embedding worker (loom.yaml's
// memory.embeddings) has done, and false when none runs: embeddings are
// off, or no recall has needed them yet.
func (b *Builder) EmbeddingStats() (embedding.Stats, bool) { return b.emb.stats() }

func (s *embedderSlot) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emb != nil {
		s.emb.Close()
	}
	s.emb, s.err, s.open = nil, nil, false
}

// errNoVectors is why a recall is by words alone on a store that keeps no
// vectors.
var errNoVectors = errors.New("the memory store keeps no vectors")

// similar is the recall's ranking by meaning when loom.yaml sets
// memory.embeddings, else nil. It also sets the store's embedding worker
// going (or wakes it), so that a store's memories get their vectors while
// a builder uses it: a workspace that turns embeddings on has its
// existing memories filled in in the background.
func (b *Builder) similar(p *recallPlan, s memory.Searcher) memory.SimilarFunc {
	if p.embeddings == nil {
		return nil
	}
	fail := func(err error) memory.SimilarFunc {
		return func(context.Context, string, int) ([]memory.Hit, error) { return nil, err }
	}
	e, err := b.emb.get(*p.embeddings)
	if err != nil {
		return fail(err)
	}
	vs, ok := s.(memory.VectorStore)
	if !ok {
		return fail(errNoVectors)
	}
	e.Watch(vs)
	return e.Similar(vs, p.user)
}
