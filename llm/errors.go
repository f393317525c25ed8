package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrStreamCut means a streamed reply ended before the endpoint said it was
// complete: the connection dropped or the server stopped mid-way.
var ErrStreamCut = errors.New("stream ended before the reply was complete")

// APIError is an error status returned by the endpoint.
type APIError struct {
	Endpoint   string
	StatusCode int
	Message    string
	// RetryAfter is the wait the server asked for, 0 when it gave none.
	RetryAfter time.Duration
	Err        error
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("llm: %s: status %d: %s", e.Endpoint, e.StatusCode, msg)
}

func (e *APIError) Unwrap() error { return e.Err }

// Temporary reports whether retrying may help: rate limits and server errors.
func (e *APIError) Temporary() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode == http.StatusRequestTimeout ||
		e.StatusCode == http.StatusConflict || e.StatusCode >= 500
}

// UnreachableError means no answer came back from the endpoint: the
// connection failed or an attempt timed out.
type UnreachableError struct {
	Endpoint string
	Timeout  bool
	Err      error
}

func (e *UnreachableError) Error() string {
	if e.Timeout {
		return fmt.Sprintf("llm: %s: no reply in time: %v", e.Endpoint, e.Err)
	}
	return fmt.Sprintf("llm: cannot reach %s: %v", e.Endpoint, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// IsToolChoiceRejected reports whether err is an endpoint refusing a forced
// tool_choice, so the caller can retry with tool_choice auto. Providers word
// this differently; the markers are the ones seen in the wild.
func IsToolChoiceRejected(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode < 400 || ae.StatusCode >= 500 {
		return false
	}
	msg := strings.ToLower(ae.Message)
	for _, m := range []string{"tool_choice", "toolchoice", "does not support", `should be ["none", "auto"]`} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// IsSchemaRejected reports whether err is an endpoint refusing a structured
// output request (a 400 that mentions the response format or schema).
func IsSchemaRejected(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode < 400 || ae.StatusCode >= 500 {
		return false
	}
	msg := strings.ToLower(ae.Message)
	for _, m := range []string{"response_format", "json_schema", "output_config", "schema", "structured"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// retryAfter reads Retry-After (seconds or an HTTP date) and the
// retry-after-ms extension some gateways send.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// retry runs attempt until it succeeds, fails for good, or the retries run
// out. started reports that part of a reply already reached the caller (a
// streamed delta), after which a retry would repeat text, so none is made.
func retry[T any](ctx context.Context, c Config, attempt func(ctx context.Context) (v T, started bool, err error)) (T, error) {
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, c.Timeout)
		v, started, err := attempt(actx)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return v, fmt.Errorf("llm: %s: %w", c.endpoint(), ctx.Err())
		}
		if timedOut {
			var ae *APIError
			if !errors.As(err, &ae) {
				err = &UnreachableError{Endpoint: c.endpoint(), Timeout: true,
					Err: fmt.Errorf("attempt timed out after %s", c.Timeout)}
			}
		}
		if started || n >= c.MaxRetries || !temporary(err) {
			return v, err
		}
		wait := c.Backoff(n + 1)
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			wait = min(ae.RetryAfter, c.MaxRetryAfter)
		}
		if err := c.Sleep(ctx, wait); err != nil {
			return v, fmt.Errorf("llm: %s: %w", c.endpoint(), err)
		}
	}
}

func temporary(err error) bool {
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

// streamErr reports a connection lost after events arrived as a cut
// stream, which is what the caller can act on.
func streamErr(c Config, err error, gotEvents bool) error {
	var ue *UnreachableError
	if gotEvents && errors.As(err, &ue) && !ue.Timeout {
		return fmt.Errorf("llm: %s: %w: %v", c.endpoint(), ErrStreamCut, ue.Err)
	}
	return err
}

// apiError is what an SDK's error from an endpoint that answered becomes;
// both SDKs' error types carry the same parts.
func apiError(endpoint string, status int, message string, resp *http.Response, raw string, err error) error {
	out := &APIError{Endpoint: endpoint, StatusCode: status, Message: message, Err: err}
	if resp != nil {
		out.RetryAfter = retryAfter(resp.Header)
	}
	if out.Message == "" {
		out.Message = strings.TrimSpace(raw)
	}
	return out
}

// transportError is what an error from an endpoint that never answered
// becomes; a cancellation stays what it is.
func transportError(endpoint string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &UnreachableError{Endpoint: endpoint, Err: err}
}
