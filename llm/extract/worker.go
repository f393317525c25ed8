package extract

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/loomctx/loom/messages"
)

// Stats count what a Worker did. Submitted = Done + Failed + Dropped +
// Abandoned + (still queued or running).
type Stats struct {
	Submitted         int64 `json:"submitted"`
	Done              int64 `json:"done"`    // finished without error, skips included
	Skipped           int64 `json:"skipped"` // of Done: no call made (too short)
	Failed            int64 `json:"failed"`
	Dropped           int64 `json:"dropped"`   // refused because the queue was full
	Abandoned         int64 `json:"abandoned"` // still queued when Close gave up
	Added             int64 `json:"added"`
	UnknownSupersedes int64 `json:"unknown_supersedes"`
}

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// QueueSize bounds the jobs waiting; default 256. Submit never blocks:
	// a job that does not fit is dropped and counted.
	QueueSize int
	Logger    *slog.Logger
	// OnResult, when set, is called after each job (for a status line).
	OnResult func(Job, Result, error)
}

// Worker runs extractions in the background, one at a time, in the order
// submitted.
type Worker struct {
	ex    *Extractor
	opts  WorkerOptions
	queue chan Job
	ctx   context.Context
	stop  context.CancelFunc
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex // guards closed against Submit racing Close
	shut  bool

	submitted, finished, skipped, failed, dropped, abandoned, added, unknown atomic.Int64
}

// NewWorker starts a worker running ex.
func NewWorker(ex *Extractor, opts WorkerOptions) *Worker {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	w := &Worker{ex: ex, opts: opts, queue: make(chan Job, opts.QueueSize), ctx: ctx, stop: stop, done: make(chan struct{})}
	go w.run()
	return w
}

// ErrQueueFull is returned by Submit when the job was dropped.
var ErrQueueFull = errors.New("extract: queue full; job dropped")

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("extract: worker closed")

// Submit queues job without waiting. The messages are copied, so the
// caller may keep appending to its slice.
func (w *Worker) Submit(job Job) error {
	job.Messages = append([]messages.Message(nil), job.Messages...)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.shut {
		return ErrClosed
	}
	w.submitted.Add(1)
	select {
	case w.queue <- job:
		return nil
	default:
		w.dropped.Add(1)
		w.opts.Logger.Error("extract: queue full; job dropped", "chat", job.Chat, "queue", w.opts.QueueSize)
		return ErrQueueFull
	}
}

func (w *Worker) run() {
	defer close(w.done)
	for job := range w.queue {
		if w.ctx.Err() != nil {
			w.abandoned.Add(1)
			continue
		}
		r, err := w.ex.Extract(w.ctx, job)
		w.added.Add(int64(len(r.Added)))
		w.unknown.Add(int64(len(r.UnknownSupersedes)))
		switch {
		case err != nil:
			w.failed.Add(1)
			w.opts.Logger.Error("extract: failed", "chat", job.Chat, "err", err)
		case r.Skipped != "":
			w.finished.Add(1)
			w.skipped.Add(1)
		default:
			w.finished.Add(1)
		}
		if w.opts.OnResult != nil {
			w.opts.OnResult(job, r, err)
		}
	}
}

// Close stops taking jobs and waits for the queued ones to finish, until
// ctx ends; then the job running is cancelled and the rest are counted as
// abandoned. It returns ctx's error when it gave up.
func (w *Worker) Close(ctx context.Context) error {
	w.once.Do(func() {
		w.mu.Lock()
		w.shut = true
		close(w.queue)
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
	return Stats{
		Submitted:         w.submitted.Load(),
		Done:              w.finished.Load(),
		Skipped:           w.skipped.Load(),
		Failed:            w.failed.Load(),
		Dropped:           w.dropped.Load(),
		Abandoned:         w.abandoned.Load(),
		Added:             w.added.Load(),
		UnknownSupersedes: w.unknown.Load(),
	}
}
