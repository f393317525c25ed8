package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
)

type ctxKey int

const requestIDKey ctxKey = 0

// requestID returns the request's id, set by the middleware.
func requestID(r *http.Request) string {
	if r == nil {
		return ""
	}
	id, _ := r.Context().Value(requestIDKey).(string)
	return id
}

// RequestID returns the id the server gave r (X-Request-Id).
func RequestID(r *http.Request) string { return requestID(r) }

// cleanID accepts a client's request id when it is short and plain.
func cleanID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recorder remembers the status and size a handler wrote. It passes
// Flush through, for Server-Sent Events.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *recorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func hashToken(t string) [32]byte { return sha256.Sum256([]byte(t)) }

// authorized compares the bearer token (or an Anthropic client's
// x-api-key) with every configured one in constant time (hashes of equal
// length, so neither content nor length leaks through timing).
func (s *Server) authorized(r *http.Request) bool {
	if len(s.tokens) == 0 {
		return true
	}
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	var tok string
	switch {
	case len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix):
		tok = strings.TrimSpace(h[len(prefix):])
	case h == "" && r.Header.Get("X-Api-Key") != "":
		// Anthropic's clients send their key as x-api-key.
		tok = strings.TrimSpace(r.Header.Get("X-Api-Key"))
	default:
		return false
	}
	got := hashToken(tok)
	ok := 0
	for _, t := range s.tokens {
		ok |= subtle.ConstantTimeCompare(got[:], t[:])
	}
	return ok == 1
}

// IsOwnToken reports whether tok is one of the server's bearer tokens (in
// constant time), so that a front end never passes the server's own
// credential on: a gateway forwarding a client's Authorization checks it.
func (s *Server) IsOwnToken(tok string) bool {
	got := hashToken(strings.TrimSpace(tok))
	ok := 0
	for _, t := range s.tokens {
		ok |= subtle.ConstantTimeCompare(got[:], t[:])
	}
	return ok == 1
}

// middleware wraps every route of every front end on the server (the API,
// the gateway, MCP, the inspector): request id, log line, recovery,
// metrics, the Host, cross-site and JSON checks (guard.go), authentication,
// body cap.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !cleanID(id) {
			id = newID()
		}
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
		w.Header().Set("X-Request-Id", id)
		rec := &recorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", "request_id", id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.status == 0 {
					s.problem(rec, r, Errorf(http.StatusInternalServerError, CodeInternal, "internal error; see the server log for request %s", id))
				}
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			d := time.Since(start)
			s.metrics.observe(r.Method, route, status, d)
			lvl := slog.LevelInfo
			if status >= 500 {
				lvl = slog.LevelError
			}
			if !s.log.Enabled(r.Context(), lvl) {
				return // the attributes below would be built for nothing
			}
			s.log.LogAttrs(r.Context(), lvl, "request",
				slog.String("request_id", id), slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.String("route", route),
				slog.Int("status", status), slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", d))
		}()
		if !s.guard(rec, r) {
			return
		}
		if !(r.Method == http.MethodGet && r.URL.Path == "/healthz") && !s.authorized(r) {
			s.problem(rec, r, Errorf(http.StatusUnauthorized, CodeUnauthorized, "a valid bearer token is required"))
			return
		}
		if !s.guardBody(rec, r) {
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(rec, r.Body, s.opts.MaxBodyBytes)
		}
		next.ServeHTTP(rec, r)
	})
}
