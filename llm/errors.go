package llm

import (
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

// ErrReplyTooLarge means the reply passed Config.MaxReplyBytes (or its
// framing passed the stream's bound) and loom stopped reading it. What
// arrived before is returned with it.
var ErrReplyTooLarge = errors.New("reply too large")

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

// maxHonoured bounds a parsed Retry-After before the retry policy's own
// cap, so no number overflows a Duration.
const maxHonoured = 24 * time.Hour

// retryAfter reads Retry-After (seconds or an HTTP date) and the
// retry-after-ms extension some gateways send.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(min(ms, maxHonoured.Seconds()*1000) * float64(time.Millisecond))
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
		return time.Duration(min(s, maxHonoured.Seconds()) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
