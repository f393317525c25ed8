package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/loomctx/loom/internal/redact"
)

// transport is what both wire formats share: the HTTP exchange, the retry
// policy, the size caps and the error shapes.
type transport struct {
	cfg      Config
	http     *http.Client
	wait     func(ctx context.Context, d time.Duration) error
	endpoint string // redacted, for messages
}

// maxErrorBody bounds how much of an error reply is read.
const maxErrorBody = 64 << 10

// rawLimit bounds the bytes read from one reply, framing included. SSE
// wraps every few characters of text in some 200 bytes of JSON, so it is
// far above MaxReplyBytes; it stops a stream that sends no text at all
// (pings, empty deltas) forever. Memory never holds more than one event.
func (t *transport) rawLimit() int64 { return 64*t.cfg.MaxReplyBytes + 1<<20 }

// bodyLimit bounds a whole JSON reply, which is held in memory to decode:
// room for the text escaped, and the envelope.
func (t *transport) bodyLimit() int64 { return 4*t.cfg.MaxReplyBytes + 1<<20 }

// post sends body to path and returns the response when the status is 2xx;
// any other status is read (bounded) into an APIError.
func (t *transport) post(ctx context.Context, path string, body []byte, header http.Header) (*http.Response, error) {
	header.Set("Content-Type", "application/json")
	return t.send(ctx, http.MethodPost, path, "", bytes.NewReader(body), header)
}

// send makes one request to path (and query) under the base URL; see post.
func (t *transport) send(ctx context.Context, method, path, query string, body io.Reader, header http.Header) (*http.Response, error) {
	u, err := parseBase(t.cfg)
	if err != nil {
		return nil, err
	}
	// The path goes after the base's; a query the base carries (an
	// api-version, say) stays.
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	if query != "" {
		u.RawQuery = strings.TrimPrefix(u.RawQuery+"&"+query, "&")
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("llm: %s: %v", t.endpoint, t.scrub(err.Error()))
	}
	req.Header = header
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, t.transportError(err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := t.scrub(errorMessage(raw))
	if t.cfg.APIKey == "" && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		msg += " (no API key was sent: set " + t.cfg.keyVar() + ")"
	}
	return nil, &APIError{Endpoint: t.endpoint, StatusCode: resp.StatusCode,
		Message: msg, RetryAfter: retryAfter(resp.Header)}
}

// errorMessage pulls the message out of an error body in either format
// ({"error":{"message":…}}, {"error":"…"}, {"message":…}), else returns
// the body's text.
func errorMessage(raw []byte) string {
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &body) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(body.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case json.Unmarshal(body.Error, &s) == nil && s != "":
			return s
		case body.Message != "":
			return body.Message
		}
	}
	return strings.TrimSpace(string(raw))
}

// scrub removes credentials from text bound for an error: the key itself,
// should the server echo it, and URL passwords and key parameters.
func (t *transport) scrub(s string) string {
	if k := t.cfg.APIKey; len(k) >= 4 {
		s = strings.ReplaceAll(s, k, redact.Mask)
	}
	return redact.String(s)
}

// transportError is what an error from an endpoint that never answered
// becomes; a cancellation stays what it is. The URL net/http puts in its
// error is dropped: the endpoint, redacted, says where.
func (t *transport) transportError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &UnreachableError{Endpoint: t.endpoint, Err: errors.New(t.scrub(err.Error()))}
}

// readJSON decodes a whole JSON reply, refusing one over bodyLimit.
func (t *transport) readJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	limit := t.bodyLimit()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return t.readError(err, false)
	}
	if int64(len(raw)) > limit {
		return t.tooLarge()
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("llm: %s: reply is not the JSON expected: %v", t.endpoint, err)
	}
	return nil
}

func (t *transport) tooLarge() error {
	return fmt.Errorf("llm: %s: %w (the limit is %d bytes; raise llm.max_reply_bytes in loom.yaml, or %s, to allow more)",
		t.endpoint, ErrReplyTooLarge, t.cfg.MaxReplyBytes, EnvMaxReplyBytes)
}

// readError is a failure while reading a reply body: a cut stream when
// part of it already arrived.
func (t *transport) readError(err error, gotEvents bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if gotEvents || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("llm: %s: %w: %v", t.endpoint, ErrStreamCut, t.scrub(err.Error()))
	}
	return t.transportError(err)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data []byte
}

// sseReader reads server-sent events with a bound on every event and on
// the whole stream.
type sseReader struct {
	br       *bufio.Reader
	maxEvent int
	left     int64 // bytes the stream may still send
	data     []byte
}

func newSSE(r io.Reader, maxEvent int, total int64) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10), maxEvent: maxEvent, left: total}
}

var errEventTooLarge = errors.New("event too large")

// eventReady reports whether a whole event is already read in, so that
// next will not wait on the network for it.
func (s *sseReader) eventReady() bool {
	buf, _ := s.br.Peek(s.br.Buffered())
	return bytes.Contains(buf, []byte("\n\n")) || bytes.Contains(buf, []byte("\r\n\r\n"))
}

// deltaBatch passes a stream's text on to its caller's onDelta: the
// deltas of the events that arrived together in one call, the moment the
// stream would wait for more. A caller that writes and flushes per call
// (a gateway re-encoding the stream) then makes one write for them, as its
// Chat Completions relay does, and no text waits for the next arrival.
type deltaBatch struct {
	on      func(string)
	pending []string
}

func (d *deltaBatch) add(s string) {
	if d.on != nil {
		d.pending = append(d.pending, s)
	}
}

// flush calls onDelta with what is pending.
func (d *deltaBatch) flush() {
	switch len(d.pending) {
	case 0:
		return
	case 1:
		d.on(d.pending[0])
	default:
		d.on(strings.Join(d.pending, ""))
	}
	d.pending = d.pending[:0]
}

// before is called before each read of the next event: what is pending
// goes out unless the next event is already in.
func (d *deltaBatch) before(s *sseReader) {
	if len(d.pending) > 0 && !s.eventReady() {
		d.flush()
	}
}

// next returns the next event with data; io.EOF at the stream's clean end.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && hasData {
				// A final event without its blank line: the stream was
				// cut inside it.
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		if len(line) == 0 {
			if hasData {
				ev.data = s.data
				return ev, nil
			}
			ev.name = ""
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
			if len(s.data) > s.maxEvent {
				return ev, errEventTooLarge
			}
		}
	}
}

// line reads one line without its end, within the event bound.
func (s *sseReader) line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := s.br.ReadSlice('\n')
		s.left -= int64(len(chunk))
		if s.left < 0 {
			return nil, errStreamTooLarge
		}
		line = append(line, chunk...)
		if len(line) > s.maxEvent+64 {
			return nil, errEventTooLarge
		}
		switch err {
		case nil:
			line = bytes.TrimSuffix(line, []byte("\n"))
			return bytes.TrimSuffix(line, []byte("\r")), nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(line) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

var errStreamTooLarge = errors.New("stream too large")

// replyCap counts reply bytes (text and tool arguments) against the limit.
type replyCap struct {
	left int64
}

func (c *replyCap) take(n int) bool {
	c.left -= int64(n)
	return c.left >= 0
}

// streamError is what ends a stream's read loop: nil for a clean end after
// the reply said it was complete, a cut stream for an end before that, a
// too-large reply for a bound passed.
func (t *transport) streamError(err error, gotEvents, done bool) error {
	switch {
	case err == io.EOF && done:
		return nil
	case err == io.EOF:
		return fmt.Errorf("llm: %s: %w", t.endpoint, ErrStreamCut)
	case errors.Is(err, errEventTooLarge) || errors.Is(err, errStreamTooLarge):
		return t.tooLarge()
	}
	return t.readError(err, gotEvents)
}

// streamedAPIError is an error the endpoint sent inside a 200 reply or a
// stream. Overload and rate-limit errors get the status they stand for, so
// the retry policy treats them alike.
func (t *transport) streamedAPIError(e *streamedError) error {
	status := 0
	switch e.Type {
	case "overloaded_error":
		status = 529
	case "rate_limit_error":
		status = http.StatusTooManyRequests
	case "api_error", "server_error":
		status = http.StatusInternalServerError
	}
	msg := e.Message
	if msg == "" {
		msg = e.Type
	}
	return &APIError{Endpoint: t.endpoint, StatusCode: status, Message: t.scrub(msg)}
}

// mergeExtra adds extra's keys to the JSON object body, in key order;
// keys in skip (the ones loom writes) are left out.
func mergeExtra(body []byte, extra map[string]json.RawMessage, skip map[string]bool) ([]byte, error) {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return body, nil
	}
	slices.Sort(keys)
	buf := bytes.NewBuffer(body[:len(body)-1])
	for _, k := range keys {
		name, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(name)
		buf.WriteByte(':')
		if err := json.Compact(buf, extra[k]); err != nil {
			return nil, fmt.Errorf("llm: request: extra key %q: %v", k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// replySize is what MaxReplyBytes counts: text, reasoning and tool calls.
func replySize(r Response) int64 {
	n := len(r.Content) + len(r.Reasoning)
	for _, tc := range r.ToolCalls {
		n += len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	return int64(n)
}
