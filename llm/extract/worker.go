package extract

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/loomctx/loom/messages"
)

// Stats count what a Worker did. Submitted = Coalesced + Done + Failed +
// Abandoned + Queued + (one running); Dropped stays 0 (a full queue makes
// Submit wait, it never throws a job away) and is kept for the metrics'
// sake.
type Stats struct {
	Submitted int64 `json:"submitted"`
	// Coalesced counts jobs folded into one already queued for the same
	// chat and user: that one mines their messages too.
	Coalesced         int64 `json:"coalesced"`
	Done              int64 `json:"done"`    // finished without error, skips included
	Skipped           int64 `json:"skipped"` // of Done: no call made (too short)
	Failed            int64 `json:"failed"`
	Dropped           int64 `json:"dropped"`
	Abandoned         int64 `json:"abandoned"` // still queued when Close gave up
	Added             int64 `json:"added"`
	UnknownSupersedes int64 `json:"unknown_supersedes"`
	// Queued is how many chats wait for extraction now; Calls how many
	// extraction calls were made (one job mining a backlog makes several).
	Queued int64 `json:"queued"`
	Calls  int64 `json:"calls"`
}

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// QueueSize bounds the chats waiting; default 1024. Jobs for a chat
	// already waiting are folded into its place, so the queue holds one
	// entry per chat; past QueueSize chats, Submit waits for room.
	QueueSize int
	Logger    *slog.Logger
	// OnResult, when set, is called after each job (for a status line).
	OnResult func(Job, Result, error)
}

// Worker runs extractions in the background, one at a time, chats in the
// order they were first submitted. It keeps, per chat and user, a pointer
// to how much of the conversation is mined, so a job mines every user
// message since the last one it mined, in calls of at most half
// MaxMessages user messages: a burst of turns on one chat is delayed, never
// lost.
type Worker struct {
	ex   *Extractor
	opts WorkerOptions
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	changed *sync.Cond      // on mu: a job came, room was made, or the worker shut
	pending map[string]*Job // per chat and user, the latest job
	order   []string        // the keys of pending, first submitted first
	mined   map[string]int  // per chat and user, messages already mined
	shut    bool

	submitted, coalesced, finished, skipped, failed, abandoned, added, unknown, calls atomic.Int64
}

// maxPointers bounds the mined pointers kept; past it they are forgotten
// and a chat's next job mines its newest user message only, as a first
// job does.
const maxPointers = 1 << 16

// NewWorker starts a worker running ex.
func NewWorker(ex *Extractor, opts WorkerOptions) *Worker {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1024
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	w := &Worker{ex: ex, opts: opts, ctx: ctx, stop: stop, done: make(chan struct{}),
		pending: map[string]*Job{}, mined: map[string]int{}}
	w.changed = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// ErrQueueFull is kept for callers that matched it; Submit no longer
// returns it.
var ErrQueueFull = errors.New("extract: queue full; job dropped")

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("extract: worker closed")

// Submit queues job. A job for a chat and user already waiting takes its
// place (its messages are the newer), counted as coalesced. When
// QueueSize chats wait already, Submit waits for room. The messages are
// copied, so the caller may keep appending to its slice; a job with Load
// is read when it runs instead.
func (w *Worker) Submit(job Job) error {
	job.Messages = append([]messages.Message(nil), job.Messages...)
	k := job.Chat + "\x00" + job.User
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if w.shut {
			return ErrClosed
		}
		if p := w.pending[k]; p != nil {
			w.submitted.Add(1)
			w.coalesced.Add(1)
			job.New += p.New // for a chat met first: every turn since
			*p = job
			return nil
		}
		if len(w.pending) < w.opts.QueueSize {
			break
		}
		w.changed.Wait()
	}
	w.submitted.Add(1)
	w.pending[k] = &job
	w.order = append(w.order, k)
	w.changed.Broadcast()
	return nil
}

// next waits for a job; ok is false once the worker is shut and empty.
func (w *Worker) next() (key string, job Job, from int, seen, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.order) == 0 && !w.shut {
		w.changed.Wait()
	}
	if len(w.order) == 0 {
		return "", Job{}, 0, false, false
	}
	key, w.order = w.order[0], w.order[1:]
	job = *w.pending[key]
	delete(w.pending, key)
	w.changed.Broadcast()
	from, seen = w.mined[key]
	return key, job, from, seen, true
}

func (w *Worker) run() {
	defer close(w.done)
	for {
		key, job, from, seen, ok := w.next()
		if !ok {
			return
		}
		if w.ctx.Err() != nil {
			w.abandoned.Add(1)
			continue
		}
		if job.Load != nil {
			msgs, err := job.Load(w.ctx)
			if err != nil {
				w.failed.Add(1)
				w.opts.Logger.Error("extract: load the conversation", "chat", job.Chat, "err", err)
				continue
			}
			job.Messages = msgs
		}
		mined, err := w.mine(job, from, seen)
		w.mu.Lock()
		if len(w.mined) >= maxPointers {
			clear(w.mined)
		}
		w.mined[key] = mined
		w.mu.Unlock()
		if err != nil {
			w.failed.Add(1)
		} else {
			w.finished.Add(1)
		}
	}
}

// mine extracts from the user messages of job after from (all of them
// when the pointer is known, else the newest only), a window at a time,
// and returns the new pointer. A failed window is logged and passed: its
// messages are not tried again, so one bad reply does not stall the chat.
func (w *Worker) mine(job Job, from int, seen bool) (int, error) {
	msgs := job.Messages
	var users []int
	for i, m := range msgs {
		if m.Role == messages.RoleUser {
			users = append(users, i)
		}
	}
	switch {
	case !seen && job.New > 0: // a chat met first: the turns its jobs added
		from = max(0, len(msgs)-job.New)
	case !seen || from > len(msgs): // no count, or a chat trimmed by /new
		from = len(msgs)
		if len(users) > 0 {
			from = users[len(users)-1]
		}
	}
	per := max(1, w.ex.opts.MaxMessages/2)
	var todo []int
	for _, u := range users {
		if u >= from {
			todo = append(todo, u)
		}
	}
	var errs []error
	for len(todo) > 0 {
		if w.ctx.Err() != nil {
			return from, w.ctx.Err()
		}
		n := min(per, len(todo))
		end := todo[n-1] + 1
		todo = todo[n:]
		window := job
		window.Messages = msgs[:end]
		w.calls.Add(1)
		r, err := w.ex.Extract(w.ctx, window)
		w.added.Add(int64(len(r.Added)))
		w.unknown.Add(int64(len(r.UnknownSupersedes)))
		switch {
		case err != nil:
			errs = append(errs, err)
			w.opts.Logger.Error("extract: failed", "chat", job.Chat, "err", err)
		case r.Skipped != "":
			w.skipped.Add(1)
		}
		if w.opts.OnResult != nil {
			w.opts.OnResult(window, r, err)
		}
		from = end
	}
	return max(from, len(msgs)), errors.Join(errs...)
}

// Close stops taking jobs and waits for the queued ones to finish, until
// ctx ends; then the job running is cancelled and the rest are counted as
// abandoned. It returns ctx's error when it gave up.
func (w *Worker) Close(ctx context.Context) error {
	w.once.Do(func() {
		w.mu.Lock()
		w.shut = true
		w.changed.Broadcast()
		w.mu.Unlock()
	})
	select {
	case <-w.done:
		w.stop()
		return nil
	case <-ctx.Done():
		w.stop()
		<-w.done
		return ctx.Err()
	}
}

// Stats returns the counts so far.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	queued := int64(len(w.pending))
	w.mu.Unlock()
	return Stats{
		Submitted:         w.submitted.Load(),
		Coalesced:         w.coalesced.Load(),
		Done:              w.finished.Load(),
		Skipped:           w.skipped.Load(),
		Failed:            w.failed.Load(),
		Abandoned:         w.abandoned.Load(),
		Added:             w.added.Load(),
		UnknownSupersedes: w.unknown.Load(),
		Queued:            queued,
		Calls:             w.calls.Load(),
	}
}
