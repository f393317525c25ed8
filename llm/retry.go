package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The retry policy, the one place loom decides when to try a call again
// and how long to wait first:
//
//   - what is retried: a 408, 409, 429 or 5xx status, a connection that
//     failed or timed out, and a stream cut before any text reached the
//     caller (a restart cannot repeat what the user saw). A stream cut
//     after text, a 4xx and a reply too large are final;
//   - how often: Config.MaxRetries times (default 2);
//   - how long: an exponential backoff from baseBackoff, doubling up to
//     maxBackoff, with "equal jitter" (a random half of it added to the
//     other half), so many clients that failed together do not retry
//     together;
//   - a server's Retry-After (or Retry-After-Ms) replaces the backoff, up
//     to maxRetryAfter: a server asking for longer is tried again after
//     maxRetryAfter, and if it still refuses, APIError.RetryAfter holds
//     what it asked.
const (
	baseBackoff   = 500 * time.Millisecond
	maxBackoff    = 8 * time.Second
	maxRetryAfter = time.Minute
)

// backoff is the wait before retry n (1-based) when the server gave none.
func backoff(n int) time.Duration {
	d := baseBackoff
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// retryWait is the wait before retry n after err.
func retryWait(n int, err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		return min(ae.RetryAfter, maxRetryAfter)
	}
	return backoff(n)
}

// retry runs attempt until it succeeds, fails for good, or the retries run
// out. Each attempt gets Config.Timeout. started reports that part of a
// reply already reached the caller (a streamed delta), after which a retry
// would repeat text, so none is made.
func retry[T any](ctx context.Context, t *transport, attempt func(ctx context.Context) (v T, started bool, err error)) (T, error) {
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
		v, started, err := attempt(actx)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return v, fmt.Errorf("llm: %s: %w", t.endpoint, ctx.Err())
		}
		if timedOut {
			var ae *APIError
			if !errors.As(err, &ae) {
				err = &UnreachableError{Endpoint: t.endpoint, Timeout: true,
					Err: fmt.Errorf("attempt timed out after %s", t.cfg.Timeout)}
			}
		}
		if started || n >= t.cfg.MaxRetries || !temporary(err) {
			return v, err
		}
		if err := t.wait(ctx, retryWait(n+1, err)); err != nil {
			return v, fmt.Errorf("llm: %s: %w", t.endpoint, err)
		}
	}
}

func temporary(err error) bool {
	if errors.Is(err, ErrReplyTooLarge) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	var ue *UnreachableError
	if errors.As(err, &ue) {
		return true
	}
	return errors.Is(err, ErrStreamCut)
}
