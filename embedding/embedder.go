package embedding

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/secretrule"
	"github.com/loomctx/loom/memory"
)

// Embedder is a workspace's memory.embeddings at work: the client, the
// query vectors of recent turns, and the worker of the store in use.
type Embedder struct {
	client  *Client
	timeout time.Duration

	qmu     sync.Mutex
	queries map[string][]float32 // the last queryCacheSize texts' vectors
	order   []string             // their texts, oldest first

	wmu        sync.Mutex
	store      memory.VectorStore
	worker     *Worker
	stopWorker context.CancelFunc
	done       chan struct{}
}

// queryCacheSize is how many turns' query vectors are kept: a client
// that sends the same message again (a retry, a regenerate) costs no
// second call.
const queryCacheSize = 256

// Env looks a variable of the operator's environment up, as os.LookupEnv
// does.
type Env func(key string) (string, bool)

// New returns the embedder of c, or an error wrapping
// secretrule.ErrRefused (llm.ErrSecretRefused) when its key may not be
// read or may not go to its endpoint: loom.yaml may name only a LOOM_*
// variable (or one in LOOM_ALLOWED_KEY_ENVS), and the key goes only to an
// official endpoint over https, LOOM_LLM_BASE_URL or a host in
// LOOM_ALLOWED_ENDPOINTS. env is os.LookupEnv when nil.
func New(c config.EmbeddingsConfig, env Env) (*Embedder, error) {
	if env == nil {
		env = os.LookupEnv
	}
	get := func(k string) string {
		v, _ := env(k)
		return strings.TrimSpace(v)
	}
	key, err := secretrule.Key("memory.embeddings.api_key_env", c.APIKeyEnv, c.BaseURL, get)
	if err != nil {
		return nil, err
	}
	cc := ClientConfig{BaseURL: c.BaseURL, Model: c.Model, Key: key, Dimensions: c.Dimensions}
	timeout := c.QueryTimeout.Std()
	if timeout <= 0 {
		timeout = config.DefaultEmbeddingQueryTimeout
	}
	return &Embedder{client: NewClient(cc), timeout: timeout, queries: map[string][]float32{}}, nil
}

// Client returns the embedder's client.
func (e *Embedder) Client() *Client { return e.client }

// Watch makes the embedder's worker embed vs's memories, starting it on
// first use and moving it when the store changes; it wakes the worker
// too, as a write to the store would.
func (e *Embedder) Watch(vs memory.VectorStore) {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if e.worker != nil && e.store == vs {
		e.worker.Notify()
		return
	}
	e.stopLocked()
	ctx, cancel := context.WithCancel(context.Background())
	e.store, e.worker, e.stopWorker, e.done = vs, NewWorker(vs, e.client), cancel, make(chan struct{})
	go func(w *Worker, done chan struct{}) {
		defer close(done)
		w.Run(ctx)
	}(e.worker, e.done)
}

// Worker returns the running worker, or nil.
func (e *Embedder) Worker() *Worker {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	return e.worker
}

// Close stops the worker and waits for it. What it had not embedded
// stays queued in the store.
func (e *Embedder) Close() {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.stopLocked()
}

func (e *Embedder) stopLocked() {
	if e.worker == nil {
		return
	}
	e.stopWorker()
	<-e.done
	e.store, e.worker, e.stopWorker, e.done = nil, nil, nil, nil
}

// QueryVector is the vector of a turn's text, from the cache or from one
// call bounded by the query timeout.
func (e *Embedder) QueryVector(ctx context.Context, text string) ([]float32, error) {
	text = cut(text, MaxInputBytes)
	e.qmu.Lock()
	v, ok := e.queries[text]
	e.qmu.Unlock()
	if ok {
		return v, nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	vs, err := e.client.Embed(ctx, []string{text})
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("embedding: no answer from the endpoint within %s", e.timeout)
		}
		return nil, err
	}
	e.qmu.Lock()
	if _, ok := e.queries[text]; !ok {
		if len(e.order) == queryCacheSize {
			delete(e.queries, e.order[0])
			e.order = e.order[1:]
		}
		e.queries[text] = vs[0]
		e.order = append(e.order, text)
	}
	e.qmu.Unlock()
	return vs[0], nil
}

// Similar returns the ranking by meaning a recall fuses with its ranking
// by words (memory.RecallOptions.Similar): the memories of user's scope in
// store nearest to the message's vector.
func (e *Embedder) Similar(store memory.VectorStore, user string) memory.SimilarFunc {
	return func(ctx context.Context, text string, limit int) ([]memory.Hit, error) {
		v, err := e.QueryVector(ctx, text)
		if err != nil {
			return nil, err
		}
		return store.Nearest(ctx, memory.VectorQuery{Model: e.client.Model(), Vector: v, User: user, Limit: limit})
	}
}
