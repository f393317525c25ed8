package llm

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// The backoff doubles from 500ms to 8s with equal jitter: every wait lies
// in [d/2, d], and the waits of one step are not all alike.
func TestBackoffJitter(t *testing.T) {
	for n, d := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second, 5: 8 * time.Second, 9: 8 * time.Second} {
		seen := map[time.Duration]bool{}
		for range 200 {
			w := backoff(n)
			if w < d/2 || w > d {
				t.Fatalf("backoff(%d) = %v, outside [%v, %v]", n, w, d/2, d)
			}
			seen[w] = true
		}
		if len(seen) < 50 {
			t.Errorf("backoff(%d): only %d distinct waits in 200: no jitter", n, len(seen))
		}
	}
}

// Retry-After replaces the backoff, capped at a minute.
func TestRetryWait(t *testing.T) {
	for _, c := range []struct {
		header string
		want   time.Duration
	}{{"3", 3 * time.Second}, {"0.25", 250 * time.Millisecond}, {"86400", time.Minute}, {"1e300", time.Minute}, {"-5", 0}, {"soon", 0}} {
		h := http.Header{}
		h.Set("Retry-After", c.header)
		err := &APIError{StatusCode: 429, RetryAfter: retryAfter(h)}
		got := retryWait(1, err)
		if c.want == 0 {
			if got < 250*time.Millisecond || got > 500*time.Millisecond {
				t.Errorf("Retry-After %q: wait %v, want the backoff", c.header, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("Retry-After %q: wait %v, want %v", c.header, got, c.want)
		}
	}
	h := http.Header{}
	h.Set("Retry-After-Ms", "1500")
	if got := retryAfter(h); got != 1500*time.Millisecond {
		t.Errorf("Retry-After-Ms: %v", got)
	}
	if temporary(errors.Join(ErrReplyTooLarge, &APIError{StatusCode: 503})) {
		t.Error("a reply too large is retried")
	}
}
