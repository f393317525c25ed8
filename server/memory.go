package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/memory"
)

// MemoryList is the body of the memory listing and export routes.
type MemoryList struct {
	Memories []memory.Memory `json:"memories"`
}

// AddMemoryRequest is the body of POST .../memories.
type AddMemoryRequest struct {
	Category   string `json:"category"`
	Content    string `json:"content"`
	User       string `json:"user,omitempty"`
	Chat       string `json:"chat,omitempty"`
	Supersedes string `json:"supersedes,omitempty"`
}

// ImportResponse says how many memories an import stored.
type ImportResponse struct {
	Imported int `json:"imported"`
}

// store opens the workspace's memory store on first use: the shared
// PostgreSQL store, or the SQLite database (created if need be).
func (ws *Workspace) store(ctx context.Context) (memory.Store, error) {
	be, err := ws.backend(ctx)
	if err != nil {
		return nil, err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if be.mem != nil {
		return be.mem, nil
	}
	cfg, err := config.Load(ws.Door)
	if err != nil {
		return nil, Errorf(http.StatusUnprocessableEntity, "config_invalid", "%v", err)
	}
	path, err := config.MemoryStoreLocation(ws.Root(), cfg)
	if err != nil {
		return nil, Errorf(http.StatusUnprocessableEntity, "config_invalid", "%v", err)
	}
	st, err := memory.OpenIn(ws.Door, path, true, memory.WithCategories(memory.CategoriesOf(cfg)))
	if err != nil {
		return nil, err
	}
	be.mem = st
	return st, nil
}

func memoryProblem(err error, field string) error {
	var (
		cat  *memory.UnknownCategoryError
		long *memory.ContentTooLongError
		imp  *memory.ImportError
	)
	switch {
	case errors.As(err, &imp):
		return &Problem{Status: http.StatusBadRequest, Code: CodeInvalidField,
			Field: fmt.Sprintf("memories[%d]", imp.Index), Detail: imp.Error()}
	case errors.As(err, &cat):
		return FieldErrorf("category", "%v", err)
	case errors.Is(err, memory.ErrEmptyContent), errors.As(err, &long):
		return FieldErrorf("content", "%v", err)
	case errors.Is(err, memory.ErrCannotSupersede), errors.Is(err, memory.ErrScope), errors.Is(err, memory.ErrCycle):
		return FieldErrorf("supersedes", "%v", err)
	case errors.Is(err, memory.ErrNotFound):
		if field != "" {
			return FieldErrorf(field, "%v", err)
		}
		return Errorf(http.StatusNotFound, "memory_not_found", "%v", err)
	}
	return err
}

func (s *Server) listMemories(r *http.Request, ws *Workspace) (any, error) {
	st, err := ws.store(r.Context())
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	if q.Has("q") {
		return searchMemories(r, st, q)
	}
	query := memory.Query{User: q.Get("user"), AllUsers: q.Get("all_users") == "true", All: q.Get("all") == "true",
		ExcludeChat: q.Get("exclude_chat")}
	for _, k := range []string{"all_users", "all"} {
		if v := q.Get(k); v != "" && v != "true" && v != "false" {
			return nil, FieldErrorf(k, "must be true or false")
		}
	}
	list, err := st.List(r.Context(), query)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []memory.Memory{}
	}
	return MemoryList{Memories: list}, nil
}

func (s *Server) exportMemories(w http.ResponseWriter, r *http.Request, ws *Workspace) {
	st, err := ws.store(r.Context())
	if err != nil {
		s.reply(w, r, nil, err)
		return
	}
	sm, ok := st.(memory.Streamer)
	if !ok {
		list, err := st.List(r.Context(), memory.Query{AllUsers: true, All: true})
		if list == nil {
			list = []memory.Memory{}
		}
		s.reply(w, r, MemoryList{Memories: list}, err)
		return
	}
	// Oldest first (as loom memory export), written as the
	// rows are read: the export holds a buffer, not the list.
	out := &sentWriter{w: w}
	bw := bufio.NewWriterSize(out, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	w.Header().Set("Content-Type", "application/json")
	bw.WriteString(`{"memories":[`)
	n := 0
	err = sm.ExportTo(r.Context(), func(m memory.Memory) error {
		if n > 0 {
			bw.WriteByte(',')
		}
		n++
		return enc.Encode(m)
	})
	if err == nil {
		bw.WriteString("]}\n")
		err = bw.Flush()
	}
	if err != nil {
		if !out.sent {
			s.reply(w, r, nil, err) // nothing went out: a plain error
			return
		}
		s.log.Error("memory export cut", "request_id", requestID(r), "err", err)
		panic(http.ErrAbortHandler) // the client sees a cut body, not a short list
	}
}

// sentWriter notes whether anything reached the client.
type sentWriter struct {
	w    io.Writer
	sent bool
}

func (s *sentWriter) Write(p []byte) (int, error) {
	s.sent = true
	return s.w.Write(p)
}

func (s *Server) addMemory(r *http.Request, ws *Workspace) (any, error) {
	var q AddMemoryRequest
	if err := DecodeJSON(r, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.Category) == "" {
		return nil, FieldErrorf("category", "is required")
	}
	st, err := ws.store(r.Context())
	if err != nil {
		return nil, err
	}
	added, err := st.Add(r.Context(), memory.NewMemory{Category: q.Category, Content: q.Content, User: q.User, Chat: q.Chat, Supersedes: q.Supersedes})
	if err != nil {
		return nil, memoryProblem(err, "supersedes")
	}
	ws.Builder.Invalidate()
	return created{MemoryList{Memories: added}}, nil
}

func (s *Server) forgetMemory(r *http.Request, ws *Workspace) (any, error) {
	st, err := ws.store(r.Context())
	if err != nil {
		return nil, err
	}
	if err := st.Forget(r.Context(), r.PathValue("id")); err != nil {
		return nil, memoryProblem(err, "")
	}
	ws.Builder.Invalidate()
	return noContent{}, nil
}

func (s *Server) importMemories(r *http.Request, ws *Workspace) (any, error) {
	if err := checkJSONType(r); err != nil {
		return nil, err
	}
	st, err := ws.store(r.Context())
	if err != nil {
		return nil, err
	}
	var n int
	if sm, ok := st.(memory.Streamer); ok {
		// A memory at a time from the body into the store's staging: the
		// import holds one memory, not the list.
		n, err = sm.ImportFrom(r.Context(), memoryStream(r.Body))
	} else {
		var q MemoryList
		if err := decodeFrom(r.Body, &q); err != nil {
			return nil, err
		}
		n, err = len(q.Memories), st.Import(r.Context(), q.Memories)
	}
	if err != nil {
		return nil, memoryProblem(err, "")
	}
	ws.Builder.Invalidate()
	return ImportResponse{Imported: n}, nil
}

// memoryStream reads a MemoryList body ({"memories": [...]}) one memory
// at a time, with DecodeJSON's rules: unknown fields refused, one value.
func memoryStream(body io.Reader) memory.ImportSource {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	state := 0 // 0 before the list, 1 in it, 2 after it
	expect := func(want json.Delim) error {
		tok, err := dec.Token()
		if err != nil {
			return decodeProblem(err)
		}
		if tok != want {
			return Errorf(http.StatusBadRequest, CodeBadJSON, "request body: want %q, found %v", want, tok)
		}
		return nil
	}
	// open reads up to the list's first element; a body without a list
	// (no "memories", or null) imports nothing.
	open := func() error {
		if err := expect('{'); err != nil {
			return err
		}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return decodeProblem(err)
			}
			if key != "memories" {
				return Errorf(http.StatusBadRequest, CodeUnknownField, "request body: unknown field %q", key)
			}
			if tok, err := dec.Token(); err != nil {
				return decodeProblem(err)
			} else if tok == nil {
				continue
			} else if tok != json.Delim('[') {
				return Errorf(http.StatusBadRequest, CodeBadJSON, "memories: want a list")
			}
			return nil
		}
		return io.EOF
	}
	end := func() error {
		if err := expect('}'); err != nil {
			return err
		}
		if _, err := dec.Token(); err != io.EOF {
			return Errorf(http.StatusBadRequest, CodeBadJSON, "request body holds more than one JSON value")
		}
		return nil
	}
	// m is the memory each call decodes into, made once: one made per
	// call goes to the heap (the decoder takes it as an interface), and
	// an import of 100,000 memories written {} allocated 43 times its body.
	var m memory.Memory
	return func() (memory.Memory, error) {
		if state == 0 {
			state = 1
			if err := open(); err == io.EOF {
				state = 2
				if err := end(); err != nil {
					return memory.Memory{}, err
				}
				return memory.Memory{}, io.EOF
			} else if err != nil {
				return memory.Memory{}, err
			}
		}
		if state == 2 {
			return memory.Memory{}, io.EOF
		}
		if !dec.More() {
			state = 2
			if err := expect(']'); err != nil {
				return memory.Memory{}, err
			}
			if dec.More() {
				return memory.Memory{}, Errorf(http.StatusBadRequest, CodeBadJSON, "request body: only \"memories\" is taken")
			}
			if err := end(); err != nil {
				return memory.Memory{}, err
			}
			return memory.Memory{}, io.EOF
		}
		m = memory.Memory{}
		if err := dec.Decode(&m); err != nil {
			return memory.Memory{}, decodeProblem(err)
		}
		return m, nil
	}
}

// maxSearchQuery bounds the text of a memory search (?q=).
const maxSearchQuery = 64 << 10

// MemoryHits is the body of a memory search: the memories best first,
// each with its score.
type MemoryHits struct {
	Memories []memory.Hit `json:"memories"`
}

// searchMemories answers GET .../memories?q=TEXT[&user=U][&limit=K]: the
// store's ranked search (memory.Searcher).
func searchMemories(r *http.Request, st memory.Store, q url.Values) (any, error) {
	text := q.Get("q")
	if len(text) > maxSearchQuery {
		return nil, FieldErrorf("q", "longer than %d bytes", maxSearchQuery)
	}
	limit := memory.DefaultSearchLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > memory.MaxSearchLimit {
			return nil, FieldErrorf("limit", "must be a number from 1 to %d", memory.MaxSearchLimit)
		}
		limit = n
	}
	s, ok := st.(memory.Searcher)
	if !ok {
		return nil, Errorf(http.StatusNotImplemented, "search_unsupported", "this memory store cannot search")
	}
	hits, err := s.Search(r.Context(), memory.SearchQuery{Text: text, User: q.Get("user"), Limit: limit})
	if err != nil {
		return nil, err
	}
	if hits == nil {
		hits = []memory.Hit{}
	}
	return MemoryHits{Memories: hits}, nil
}
