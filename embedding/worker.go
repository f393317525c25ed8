package embedding

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomctx/loom/memory"
)

// Worker gives a store's memories their vectors, in the background. Its
// queue is the store itself: the active memories without a vector for
// the client's model (memory.VectorStore.Unembedded), read a batch at a
// time in the order they were written. So a write never waits for it, a
// burst of writes only delays it, and nothing is lost when the endpoint
// is down or the process stops: the next pass finds what is still
// missing. A failed batch is tried again after a pause that doubles up
// to MaxBackoff.
type Worker struct {
	store  memory.VectorStore
	client *Client

	// Batch is how many memories go in one call; default 32, at most
	// MaxBatch.
	Batch int
	// Poll is how often the worker looks for memories written without a
	// Notify (by another process on the same store, say); default 2s.
	Poll time.Duration
	// Sweep is how often it looks again from the first memory, for one
	// passed over: a memory the endpoint kept refusing, or, in
	// PostgreSQL, one whose write committed after a later one's; default
	// 5 minutes.
	Sweep time.Duration
	// MinBackoff and MaxBackoff bound the pause after a failure;
	// defaults 500ms and 1 minute.
	MinBackoff, MaxBackoff time.Duration

	wake chan struct{}

	embedded, failures, skipped atomic.Int64
	mu                          sync.Mutex
	lastErr                     error
	idle                        chan struct{} // closed and replaced when the queue is found empty
}

// NewWorker returns a worker that embeds store's memories with c. Run
// starts it.
func NewWorker(store memory.VectorStore, c *Client) *Worker {
	return &Worker{store: store, client: c, wake: make(chan struct{}, 1), idle: make(chan struct{})}
}

// Notify tells the worker memories were written. It never blocks: one
// pending notice stands for any number.
func (w *Worker) Notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Stats is what a worker has done so far.
type Stats struct {
	// Embedded counts the memories given a vector.
	Embedded int64
	// Failures counts failed batches (each tried again later).
	Failures int64
	// Skipped counts memories passed over after failing alone
	// maxAttempts times; the next sweep tries them again.
	Skipped int64
	// LastError is the last failure, nil after a success.
	LastError error
}

// Stats returns the worker's counts.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Stats{Embedded: w.embedded.Load(), Failures: w.failures.Load(), Skipped: w.skipped.Load(), LastError: w.lastErr}
}

// Idle returns a channel closed the next time the worker finds nothing
// left to embed.
func (w *Worker) Idle() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.idle
}

// maxAttempts is how often one memory is tried alone before the worker
// passes over it until the next sweep: an endpoint may refuse one text
// for good (too long for the model, say), which must not hold up the
// rest.
const maxAttempts = 5

// Run embeds until ctx ends.
func (w *Worker) Run(ctx context.Context) {
	batch := w.Batch
	if batch <= 0 {
		batch = 32
	}
	batch = min(batch, MaxBatch)
	poll := orDefault(w.Poll, 2*time.Second)
	sweep := orDefault(w.Sweep, 5*time.Minute)
	minPause, maxPause := orDefault(w.MinBackoff, 500*time.Millisecond), orDefault(w.MaxBackoff, time.Minute)

	var (
		after     int64 // the queue is read from after this memory
		lastSweep = time.Now()
		pause     time.Duration
		failed    int // consecutive failures
	)
	wait := func(d time.Duration, wakeable bool) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		var wake <-chan struct{}
		if wakeable {
			wake = w.wake
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		case <-wake:
		}
		return true
	}
	for ctx.Err() == nil {
		if time.Since(lastSweep) >= sweep {
			after, lastSweep = 0, time.Now()
		}
		n := batch
		if failed >= maxAttempts {
			n = 1 // find the one memory that fails
		}
		todo, last, err := w.store.Unembedded(ctx, w.client.Model(), after, n)
		if err == nil && len(todo) == 0 {
			after = last
			w.setIdle()
			if !wait(poll, true) {
				return
			}
			continue
		}
		if err == nil {
			err = w.embed(ctx, todo)
		}
		if err == nil {
			after, pause, failed = last, 0, 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		w.failures.Add(1)
		w.mu.Lock()
		w.lastErr = err
		w.mu.Unlock()
		failed++
		var se *StatusError
		if len(todo) == 1 && failed >= 2*maxAttempts && !(errors.As(err, &se) && !se.Permanent()) {
			// This memory alone keeps failing: go on past it.
			w.skipped.Add(1)
			after, failed = todo[0].Key, 0
		}
		pause = min(max(2*pause, minPause), maxPause)
		if !wait(pause, false) {
			return
		}
	}
}

// embed gives todo their vectors.
func (w *Worker) embed(ctx context.Context, todo []memory.Unembedded) error {
	texts := make([]string, len(todo))
	for i, u := range todo {
		texts[i] = u.Content
	}
	vecs, err := w.client.Embed(ctx, texts)
	if err != nil {
		return err
	}
	vs := make([]memory.Vector, len(todo))
	for i, u := range todo {
		vs[i] = memory.Vector{Key: u.Key, Values: vecs[i]}
	}
	if err := w.store.PutVectors(ctx, w.client.Model(), vs); err != nil {
		return err
	}
	w.embedded.Add(int64(len(vs)))
	w.mu.Lock()
	w.lastErr = nil
	w.mu.Unlock()
	return nil
}

func (w *Worker) setIdle() {
	w.mu.Lock()
	close(w.idle)
	w.idle = make(chan struct{})
	w.mu.Unlock()
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
