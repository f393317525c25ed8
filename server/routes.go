package server

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The OpenAPI document is kept as openapi.json and embedded compressed
// (154 KB of JSON, 11 KB in the binary); TestOpenAPIGzipCurrent fails
// when the two differ.
//
//go:generate go run ./internal/gzipfile openapi.json
//go:embed openapi.json.gz
var openapiGzip []byte

// openapiDoc is the document, decompressed on first use.
var openapiDoc = sync.OnceValue(func() []byte {
	zr, err := gzip.NewReader(bytes.NewReader(openapiGzip))
	if err != nil {
		panic("server: embedded openapi.json.gz: " + err.Error()) // built in, checked by the tests
	}
	doc, err := io.ReadAll(zr)
	if err != nil {
		panic("server: embedded openapi.json.gz: " + err.Error())
	}
	return doc
})

// OpenAPI returns the server's OpenAPI 3.1 document.
func OpenAPI() []byte { return openapiDoc() }

// acceptsGzip reports whether a request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, enc := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(enc, ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			// gzip;q=0 refuses it; any other weight takes it.
			if qs, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				q, err := strconv.ParseFloat(qs, 64)
				return err != nil || q > 0
			}
			return true
		}
	}
	return false
}

// api adapts a handler that returns (value, error) to a workspace route:
// the value is encoded as JSON with status 200, the error as a problem.
func (s *Server) api(h func(r *http.Request, ws *Workspace) (any, error)) WorkspaceHandler {
	return func(w http.ResponseWriter, r *http.Request, ws *Workspace) {
		v, err := h(r, ws)
		s.reply(w, r, v, err)
	}
}

// created is a value sent with 201 Created.
type created struct{ v any }

// rawJSON is a body already encoded, sent with 200.
type rawJSON []byte

// pooledJSON is a body already encoded in a buffer of jsonBufs, sent with
// 200; the buffer goes back to the pool once written.
type pooledJSON struct{ buf *bytes.Buffer }

// jsonBufs are response buffers, reused: a message list with a large
// workspace's prompt is some 150 KB, and growing a new buffer to that size
// for every response was a fifth of the route's CPU.
var jsonBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledJSON bounds a buffer kept for reuse.
const maxPooledJSON = 4 << 20

// noContent is sent as 204 No Content.
type noContent struct{}

func (s *Server) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		if _, ok := err.(*Problem); !ok {
			s.log.Error("handler failed", "request_id", requestID(r), "route", r.Pattern, "err", err)
		}
		WriteProblem(w, r, err)
		return
	}
	switch v := v.(type) {
	case noContent:
		w.WriteHeader(http.StatusNoContent)
	case rawJSON:
		writeBody(w, http.StatusOK, v)
	case pooledJSON:
		writeBody(w, http.StatusOK, v.buf.Bytes())
		if v.buf.Cap() <= maxPooledJSON {
			jsonBufs.Put(v.buf)
		}
	case created:
		WriteJSON(w, http.StatusCreated, v.v)
	default:
		WriteJSON(w, http.StatusOK, v)
	}
}

func (s *Server) routes() {
	s.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.isReady() {
			WriteProblem(w, r, Errorf(http.StatusServiceUnavailable, CodeUnavailable, "shutting down"))
			return
		}
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	s.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	s.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
			w.Write(openapiGzip)
			return
		}
		w.Write(openapiDoc())
	})
	s.HandleFunc("POST /v1/tokens", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.countTokens(r)
		s.reply(w, r, v, err)
	})
	s.HandleWorkspace("POST /v1/workspaces/{ws}/render", s.render)
	s.HandleWorkspace("POST /v1/workspaces/{ws}/messages", s.api(s.buildMessages))
	s.HandleWorkspace("POST /v1/workspaces/{ws}/sessions/{id}/turns", s.turn)
	s.HandleWorkspace("GET /v1/workspaces/{ws}/sessions/{id}/messages", s.api(s.sessionMessages))
	s.HandleWorkspace("GET /v1/workspaces/{ws}/skills", s.api(s.listSkills))
	s.HandleWorkspace("GET /v1/workspaces/{ws}/skills/{name}", s.api(s.getSkill))
	s.HandleWorkspace("POST /v1/workspaces/{ws}/skills/{name}/expand", s.api(s.expandSkill))
	s.HandleWorkspace("GET /v1/workspaces/{ws}/memories", s.api(s.listMemories))
	s.HandleWorkspace("POST /v1/workspaces/{ws}/memories", s.api(s.addMemory))
	s.HandleWorkspace("DELETE /v1/workspaces/{ws}/memories/{id}", s.api(s.forgetMemory))
	s.HandleWorkspace("GET /v1/workspaces/{ws}/memories/export", s.exportMemories)
	s.HandleWorkspace("POST /v1/workspaces/{ws}/memories/import", s.api(s.importMemories))
	s.HandleFunc("/", s.notFound)
}

// notFound answers a request no route matched: 405 with Allow when the
// path exists under another method, else 404, both as problems.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := s.mux.Handler(probe); pat != "" && pat != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.problem(w, r, Errorf(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	s.problem(w, r, Errorf(http.StatusNotFound, CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
}
