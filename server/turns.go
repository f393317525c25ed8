package server

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/consolidate"
	"github.com/loomctx/loom/llm/extract"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// TurnRequest is the body of POST .../sessions/{id}/turns.
type TurnRequest struct {
	Message string `json:"message"`
	// Channel and User fill the runtime block and pick the channel
	// wrapper and the user's memories.
	Channel string `json:"channel,omitempty"`
	User    string `json:"user,omitempty"`
	// Stream sends the reply as Server-Sent Events: "delta" events with
	// {"text"}, then one "done" event with the TurnResponse (or "error"
	// with a problem).
	Stream bool `json:"stream,omitempty"`
}

// TurnResponse is what a turn did: session.TurnResult's fields.
type TurnResponse struct {
	Session string          `json:"session"`
	Reply   string          `json:"reply"`
	Cut     string          `json:"cut,omitempty"`
	Usage   llm.Usage       `json:"usage"`
	Build   messages.Report `json:"build"`
	Saved   bool            `json:"saved"`
	// PromptWarning is a render problem that did not stop the turn.
	PromptWarning string `json:"prompt_warning,omitempty"`
}

// SessionMessages is the body of GET .../sessions/{id}/messages.
type SessionMessages struct {
	Session          string             `json:"session"`
	LastConsolidated int                `json:"last_consolidated"`
	Messages         []messages.Message `json:"messages"`
}

// Engine is what the turns of one workspace share: its model client,
// extraction worker and open sessions. Front ends mounted on the server
// (the gateway) use it through [Workspace.Engine].
type Engine struct {
	Config               *config.Config
	LLM                  llm.Config
	Client               llm.Client
	Extract              *extract.Worker // nil when extraction is off
	Store                memory.Store
	Counter              tokens.Counter
	Location             *time.Location
	Placement            messages.Placement
	ConsolidateThreshold int // <0: off

	// MaxOpenSessions bounds the sessions kept open; 0 is
	// maxOpenSessions.
	MaxOpenSessions int

	file *workspace.File // the loom.yaml it was built from; nil when none

	mu       sync.Mutex
	holds    int  // sessions held by requests, all keys
	retired  bool // replaced: closed when holds reaches 0
	sessions map[string]*openSession
	lru      list.List // of *openSession, most recently used first
}

// maxOpenSessions bounds the sessions kept open per workspace; past it the
// least recently used one that no request holds is closed (its history
// stays in the store).
const maxOpenSessions = 1024

// Engine returns the workspace's turn engine, built from loom.yaml's llm:
// section and the operator's environment on first use and again when
// loom.yaml changes (the door hands back another file), so an edit applies
// to the next turn of every front end with no restart. The engine it
// replaces is closed once no request holds one of its sessions. Without a
// configured model it returns a 503 problem; a broken loom.yaml is a 422.
func (ws *Workspace) Engine() (*Engine, error) {
	f, ferr := ws.Door.Load(config.FileName)
	if ferr != nil {
		f = nil
	}
	ws.mu.Lock()
	e := ws.engine
	ws.mu.Unlock()
	if e != nil && e.file == f {
		return e, nil
	}
	cfg, err := config.Load(ws.Door)
	if err != nil {
		return nil, Errorf(http.StatusUnprocessableEntity, "config_invalid", "%v", err)
	}
	lc, err := llm.Resolve(cfg.LLM, nil)
	if err != nil {
		return nil, Errorf(http.StatusServiceUnavailable, "llm_refused", "%v", err)
	}
	client, err := llm.New(lc)
	if err != nil {
		return nil, Errorf(http.StatusServiceUnavailable, "llm_not_configured", "%v; configure llm: in loom.yaml or LOOM_LLM_* in the server's environment", err)
	}
	store, err := ws.store(context.Background())
	if err != nil {
		return nil, err
	}
	if _, err := ws.backend(context.Background()); err != nil {
		return nil, err
	}
	counter := Counter(nil, "", lc.Model)
	rt, _ := session.RuntimeFromConfig(cfg) // an unknown zone stays UTC here, as before
	e = &Engine{file: f, Config: cfg, LLM: lc, Client: client, Store: store, Counter: counter, Location: rt.Location,
		Placement: rt.Placement, ConsolidateThreshold: -1, sessions: map[string]*openSession{}}
	if llm.Enabled(cfg.LLM.Consolidation.Enabled, lc) {
		e.ConsolidateThreshold = cfg.LLM.Consolidation.ThresholdTokens
	}
	if llm.Enabled(cfg.LLM.Extraction.Enabled, lc) {
		ex := extract.New(extract.Options{Client: client, Store: store, Model: lc.ExtractModel,
			IncludeAssistant: cfg.LLM.Extraction.IncludeAssistant != nil && *cfg.LLM.Extraction.IncludeAssistant,
			Logger:           ws.log})
		e.Extract = extract.NewWorker(ex, extract.WorkerOptions{Logger: ws.log})
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if cur := ws.engine; cur != nil && cur.file == f { // another request built one first
		if e.Extract != nil {
			go e.Extract.Close(context.Background())
		}
		return cur, nil
	}
	if old := ws.engine; old != nil {
		old.retire()
	}
	ws.engine = e
	return e, nil
}

// retire closes the engine once no request holds one of its sessions:
// their turns finish with the settings they started with.
func (e *Engine) retire() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.retired = true
	if e.holds == 0 {
		go e.closeRetired()
	}
}

func (e *Engine) closeRetired() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.close(ctx); err != nil {
		slog.Default().Warn("closing the engine of a replaced loom.yaml: " + err.Error())
	}
}

// SessionOptions name one conversation: its key, and the channel and user
// its prompt and runtime block are rendered for.
type SessionOptions struct {
	Key, Channel, User string
	// Prompt are further render options; Channel, User and ChatID are set
	// from the fields above.
	Prompt prompt.Options
}

// openSession is one session the engine keeps open: how many requests
// hold it, and its place in the least-recently-used order.
type openSession struct {
	key  string
	s    *session.Session
	refs int
	elem *list.Element
}

// Session returns the open session for these options, opening it on first
// use with the workspace's shared builder, client, session store and
// extraction worker, and holds it for the caller until release is called.
// Past maxOpenSessions the least recently used session nobody holds is
// closed (its history stays in the store); a held one never is.
func (e *Engine) Session(ctx context.Context, ws *Workspace, o SessionOptions) (s *session.Session, release func(), err error) {
	k := o.Key + "\x00" + o.Channel + "\x00" + o.User
	e.mu.Lock()
	if held, ok := e.sessions[k]; ok {
		held.refs++
		e.holds++
		e.lru.MoveToFront(held.elem)
		e.mu.Unlock()
		return held.s, e.releaser(held), nil
	}
	e.mu.Unlock()
	store, err := ws.SessionStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	po := o.Prompt
	po.Channel, po.User, po.ChatID = o.Channel, o.User, o.Key
	so := session.Options{
		Workspace: ws.Door, Builder: ws.Builder, Prompt: po, Counter: e.Counter, Store: store,
		Key: o.Key, Channel: o.Channel, User: o.User, Location: e.Location, Placement: e.Placement,
		Client: e.Client, Logger: ws.log,
	}
	so.Window, so.Reserve = e.Config.Window(e.LLM.Model)
	if so.Window == 0 {
		so.Window = fit.KnownWindow(e.LLM.Model)
	}
	if e.Extract != nil {
		so.Extract = e.Extract
	}
	if e.ConsolidateThreshold >= 0 {
		so.Consolidate = &consolidate.Options{Model: e.LLM.ConsolidateModel, Threshold: e.ConsolidateThreshold}
	}
	opened, err := session.Open(context.WithoutCancel(ctx), so)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if held, ok := e.sessions[k]; ok { // another request opened it meanwhile
		go opened.Close(context.Background())
		held.refs++
		e.holds++
		e.lru.MoveToFront(held.elem)
		return held.s, e.releaser(held), nil
	}
	e.holds++
	held := &openSession{key: k, s: opened, refs: 1}
	held.elem = e.lru.PushFront(held)
	e.sessions[k] = held
	e.evict()
	return opened, e.releaser(held), nil
}

// releaser returns the release of one hold on held.
func (e *Engine) releaser(held *openSession) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			held.refs--
			e.holds--
			e.evict()
			if e.retired && e.holds == 0 {
				go e.closeRetired()
			}
		})
	}
}

// evict closes the least recently used sessions nobody holds while more
// than maxOpenSessions are open; e.mu is held.
func (e *Engine) evict() {
	for el := e.lru.Back(); el != nil && len(e.sessions) > e.maxOpen(); {
		held := el.Value.(*openSession)
		el = el.Prev()
		if held.refs > 0 {
			continue
		}
		e.lru.Remove(held.elem)
		delete(e.sessions, held.key)
		go held.s.Close(context.Background())
	}
}

func (e *Engine) maxOpen() int {
	if e.MaxOpenSessions > 0 {
		return e.MaxOpenSessions
	}
	return maxOpenSessions
}

// OpenSessions is how many sessions the engine keeps open.
func (e *Engine) OpenSessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.sessions)
}

// close closes the sessions (waiting for their consolidations), then
// drains the extraction queue, within ctx.
func (e *Engine) close(ctx context.Context) error {
	e.mu.Lock()
	ss := e.sessions
	e.sessions = map[string]*openSession{}
	e.lru.Init()
	e.mu.Unlock()
	var errs []error
	for _, held := range ss {
		errs = append(errs, held.s.Close(ctx))
	}
	if e.Extract != nil {
		errs = append(errs, e.Extract.Close(ctx))
	}
	return errors.Join(errs...)
}

// validKey reports whether a session id is a plain, bounded name.
func validKey(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' || c == '@') {
			return false
		}
	}
	return true
}

func sessionID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !validKey(id) {
		return "", FieldErrorf("id", "a session id is 1 to 128 letters, digits and - _ . : @, not starting with a dot")
	}
	return id, nil
}

// turnProblem maps a failed turn to a problem: the model's own status
// relayed as 502 (429 kept, with its wait), an unreachable model 502.
func turnProblem(err error) *Problem {
	var api *llm.APIError
	var unreach *llm.UnreachableError
	switch {
	case errors.Is(err, memory.ErrUnavailable):
		return storeProblem(err).(*Problem)
	case errors.As(err, &api):
		status := http.StatusBadGateway
		if api.StatusCode == http.StatusTooManyRequests {
			status = http.StatusTooManyRequests
		}
		return Errorf(status, "upstream_error", "%v", err)
	case errors.As(err, &unreach):
		return Errorf(http.StatusBadGateway, "upstream_unreachable", "%v", err)
	case errors.Is(err, messages.ErrEmptyMessage):
		return FieldErrorf("message", "%v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Errorf(499, "client_closed", "the request ended before the reply: %v", err)
	}
	return Errorf(http.StatusBadGateway, "turn_failed", "%v", err)
}

func (s *Server) turn(w http.ResponseWriter, r *http.Request, ws *Workspace) {
	id, err := sessionID(r)
	if err != nil {
		WriteProblem(w, r, err)
		return
	}
	var q TurnRequest
	if err := DecodeJSON(r, &q); err != nil {
		WriteProblem(w, r, err)
		return
	}
	for name, v := range map[string]string{"channel": q.Channel, "user": q.User} {
		if len(v) > maxOptionBytes {
			WriteProblem(w, r, FieldErrorf(name, "longer than %d bytes", maxOptionBytes))
			return
		}
	}
	if q.Message == "" {
		WriteProblem(w, r, FieldErrorf("message", "is empty"))
		return
	}
	e, err := ws.Engine()
	if err != nil {
		WriteProblem(w, r, err)
		return
	}
	sess, release, err := e.Session(r.Context(), ws, SessionOptions{Key: id, Channel: q.Channel, User: q.User})
	if err != nil {
		WriteProblem(w, r, err)
		return
	}
	defer release()
	key := r.Header.Get("Idempotency-Key")
	if len(key) > maxOptionBytes {
		WriteProblem(w, r, FieldErrorf("Idempotency-Key", "longer than %d bytes", maxOptionBytes))
		return
	}
	in := session.TurnInput{Text: q.Message, ID: key}
	var sse *sseWriter
	if q.Stream {
		sse = newSSE(w)
		in.OnDelta = func(d string) { sse.event("delta", map[string]string{"text": d}) }
	}
	res, err := sess.Turn(r.Context(), in)
	out := TurnResponse{Session: id, Reply: res.Reply, Cut: res.Cut, Usage: res.Usage, Build: res.Build, Saved: res.Saved}
	if out.Build.Expansions == nil { // a turn that failed before its build
		out.Build = messages.Report{Sections: []messages.SectionHash{}, History: []string{}, Media: []messages.Attached{},
			DroppedMedia: []messages.Dropped{}, Expansions: []messages.Expansion{}, Warnings: []string{}}
	}
	if res.PromptErr != nil {
		out.PromptWarning = res.PromptErr.Error()
	}
	if err != nil {
		p := turnProblem(err)
		s.log.Warn("turn failed", "request_id", requestID(r), "session", id, "err", err, "saved", res.Saved)
		if sse != nil {
			sse.problem(r, p)
			return
		}
		var api *llm.APIError
		if errors.As(err, &api) && api.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(api.RetryAfter.Seconds()+0.5)))
		}
		WriteProblem(w, r, p)
		return
	}
	if sse != nil {
		sse.event("done", out)
		return
	}
	WriteJSON(w, http.StatusOK, out)
}

func (s *Server) sessionMessages(r *http.Request, ws *Workspace) (any, error) {
	id, err := sessionID(r)
	if err != nil {
		return nil, err
	}
	store, err := ws.SessionStore(r.Context())
	if err != nil {
		return nil, err
	}
	st, err := store.Load(r.Context(), id)
	if err != nil {
		return nil, err
	}
	out := SessionMessages{Session: id, LastConsolidated: st.LastConsolidated, Messages: st.Messages}
	if out.Messages == nil {
		out.Messages = []messages.Message{}
	}
	return out, nil
}

// sseWriter writes Server-Sent Events, flushing each.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	mu sync.Mutex
}

func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *sseWriter) event(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data)
	s.rc.Flush()
}

func (s *sseWriter) problem(r *http.Request, p *Problem) {
	out := *p
	out.Type = "https://loom.dev/problems/" + out.Code
	out.Title = http.StatusText(out.Status)
	out.Instance, out.RequestID = r.URL.Path, requestID(r)
	s.event("error", out)
}
