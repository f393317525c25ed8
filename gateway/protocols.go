package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/gateway/protocol"
	"github.com/loomctx/loom/internal/redact"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/server"
	"github.com/loomctx/loom/session"
)

// The Responses and Messages front ends. Each request is decoded by
// package protocol into loom's messages and the call's options, built
// like a Chat Completions turn (loom's prompt, memories, skills, runtime
// block), sent through llm's client for the configured upstream (OpenAI-
// compatible or Anthropic, whichever the client speaks), and answered in
// the client's protocol, streamed or not. The model is loom.yaml's
// llm.model unless gateway.models maps the client's model id.
//
// Routes (an Anthropic client's base URL is the server, or
// /v1/workspaces/{ws}, and its SDK adds /v1/messages):
//
//	POST /v1/responses                     POST /v1/workspaces/{ws}/responses
//	POST /v1/messages                      POST /v1/workspaces/{ws}/v1/messages
//	POST /v1/messages/count_tokens         POST /v1/workspaces/{ws}/v1/messages/count_tokens
//	GET  /v1/models                        GET  /v1/workspaces/{ws}/models, …/v1/models

// front is the protocol a request came in.
type front int

const (
	frontOpenAI front = iota
	frontAnthropic
)

func (g *Gateway) mountProtocols(s *server.Server) {
	def := func(f front, h server.WorkspaceHandler) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			ws, err := s.Workspace(server.DefaultWorkspace)
			if err != nil {
				g.fail(w, f, http.StatusNotFound, "workspace_not_found", "",
					"no default workspace: this server serves a root of workspaces; use /v1/workspaces/{ws}"+strings.TrimPrefix(r.URL.Path, "/v1")+
						"; served: "+strings.Join(s.WorkspaceNames(), ", "))
				return
			}
			h(w, r, ws)
		}
	}
	s.HandleFunc("POST /v1/responses", def(frontOpenAI, g.responses))
	s.HandleWorkspace("POST /v1/workspaces/{ws}/responses", g.responses)
	s.HandleFunc("POST /v1/messages", def(frontAnthropic, g.messagesAPI))
	s.HandleWorkspace("POST /v1/workspaces/{ws}/v1/messages", g.messagesAPI)
	s.HandleFunc("POST /v1/messages/count_tokens", def(frontAnthropic, g.countTokens))
	s.HandleWorkspace("POST /v1/workspaces/{ws}/v1/messages/count_tokens", g.countTokens)
	s.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		f := frontOf(r)
		def(f, g.models)(w, r)
	})
	s.HandleWorkspace("GET /v1/workspaces/{ws}/models", g.models)
	s.HandleWorkspace("GET /v1/workspaces/{ws}/v1/models", g.models)
	s.ShapeErrors(func(w http.ResponseWriter, r *http.Request, p *server.Problem) bool {
		f, ok := gatewayPath(r)
		if !ok {
			return false
		}
		msg := p.Detail
		if p.Code == server.CodeWorkspaceUnknown {
			msg += "; served: " + strings.Join(s.WorkspaceNames(), ", ")
		}
		g.fail(w, f, p.Status, p.Code, p.Field, msg)
		return true
	})
}

// frontOf is the protocol a request speaks by its path and headers: an
// Anthropic client sends anthropic-version.
func frontOf(r *http.Request) front {
	if r.Header.Get("Anthropic-Version") != "" || strings.Contains(r.URL.Path, "/v1/messages") && !strings.HasPrefix(r.URL.Path, "/v1/workspaces/") {
		return frontAnthropic
	}
	if rest, ok := workspaceRest(r.URL.Path); ok && strings.HasPrefix(rest, "/v1/messages") {
		return frontAnthropic
	}
	return frontOpenAI
}

// workspaceRest is what follows /v1/workspaces/{ws} in a path.
func workspaceRest(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/v1/workspaces/")
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return "", true
	}
	return rest[i:], true
}

// gatewayPath reports whether a request is for a gateway route (an
// OpenAI or Anthropic client's, whose errors must be in its protocol's
// shape) and which protocol: a model API path at the top (any /v1/ path
// that is not loom's own API) or under a workspace.
func gatewayPath(r *http.Request) (front, bool) {
	p := r.URL.Path
	rest, inWS := workspaceRest(p)
	if !inWS {
		if !strings.HasPrefix(p, "/v1/") || p == "/v1/tokens" || p == "/v1/openapi.json" || strings.HasPrefix(p, "/v1/workspaces") {
			return 0, false
		}
		return frontOf(r), true
	}
	for _, pre := range []string{"/chat/", "/responses", "/models", "/v1/", "/completions", "/embeddings"} {
		if strings.HasPrefix(rest, pre) {
			return frontOf(r), true
		}
	}
	return 0, false
}

// fail writes an error in the front's shape.
func (g *Gateway) fail(w http.ResponseWriter, f front, status int, code, param, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if code == server.CodeStoreUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	var body []byte
	if f == frontAnthropic {
		body = protocol.AnthropicError(protocol.AnthropicErrorType(status), msg)
	} else {
		body = protocol.OpenAIError(protocol.OpenAIErrorType(status), code, param, msg)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// readBody reads a request body, answering a too-large one.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, f front) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			g.fail(w, f, http.StatusRequestEntityTooLarge, "body_too_large", "", "request body larger than "+strconv.FormatInt(mb.Limit, 10)+" bytes")
		}
		return nil, false
	}
	return body, true
}

// ready returns the workspace's upstream, answering when there is none.
func (g *Gateway) ready(w http.ResponseWriter, r *http.Request, ws *server.Workspace, f front) (*upstream, bool) {
	if err := ws.Ready(r.Context()); err != nil {
		g.failure(w, r, f, err)
		return nil, false
	}
	eng, err := ws.Engine()
	if err != nil {
		var p *server.Problem
		if errors.As(err, &p) && p.Status == http.StatusServiceUnavailable && p.Code != server.CodeStoreUnavailable {
			g.fail(w, f, http.StatusServiceUnavailable, "upstream_not_configured", "", err.Error())
			return nil, false
		}
		g.failure(w, r, f, err)
		return nil, false
	}
	st := g.upstreamFor(ws, eng)
	if st.err != nil {
		status, code := http.StatusServiceUnavailable, "upstream_not_configured"
		msg := redact.String(st.err.Error())
		if isConfigError(st.err) {
			status, code, msg = http.StatusUnprocessableEntity, "config_invalid", st.err.Error()
		}
		g.fail(w, f, status, code, "", msg)
		return nil, false
	}
	return st, true
}

// turnKey is the Extra key on the first message a turn stores naming the
// turn (session.TurnKey; for the Responses API the response id), so
// previous_response_id and item_reference find it again.
const turnKey = session.TurnKey

// newResponseID makes a response id that carries its session: resp_,
// the session key in hex, _, and 8 bytes in hex: random, or the start of
// the SHA-256 of the client's Idempotency-Key, so that a retry names the
// same turn and is stored once. Hex has no _, so the session reads back
// from any id made from it (msg_…, fc_…_N).
func newResponseID(session, idempotencyKey string) string {
	var b [8]byte
	if idempotencyKey != "" {
		sum := sha256.Sum256([]byte(idempotencyKey))
		copy(b[:], sum[:])
	} else {
		rand.Read(b[:])
	}
	return "resp_" + hex.EncodeToString([]byte(session)) + "_" + hex.EncodeToString(b[:])
}

// idSession is the session a response or item id names, and the id of
// the response it belongs to.
func idSession(id string) (session, respID string, ok bool) {
	var rest string
	for _, p := range []string{"resp_", "msg_", "fc_"} {
		if r, found := strings.CutPrefix(id, p); found {
			rest = r
			break
		}
	}
	h, tail, found := strings.Cut(rest, "_")
	if !found || len(tail) < 16 {
		return "", "", false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || !plainName(string(raw)) {
		return "", "", false
	}
	return string(raw), "resp_" + h + "_" + tail[:16], true
}

// storedTurn is a response loom stored: the session up to its end, and
// its reply.
type storedTurn struct {
	history []messages.Message
	reply   messages.Message
}

// findResponse loads the turn a response id names from its session.
func (g *Gateway) findResponse(ctx context.Context, ws *server.Workspace, id string) (*storedTurn, error) {
	key, respID, ok := idSession(id)
	if !ok {
		return nil, errors.New("no response " + strconv.Quote(id) + " from loom")
	}
	store, err := ws.SessionStore(ctx)
	if err != nil {
		return nil, err
	}
	sess, err := store.Load(ctx, key)
	if err != nil {
		return nil, err
	}
	want, _ := json.Marshal(respID)
	start := -1
	for i, m := range sess.Messages {
		if v, ok := m.Extra()[turnKey]; ok {
			if start >= 0 {
				return newStored(sess.Messages[:i], start), nil
			}
			if string(v) == string(want) {
				start = i
			}
		}
	}
	if start < 0 {
		return nil, errors.New("no response " + strconv.Quote(id) + " in session " + strconv.Quote(key) + " (it was not stored, or the session was cleared)")
	}
	return newStored(sess.Messages, start), nil
}

func newStored(msgs []messages.Message, start int) *storedTurn {
	t := &storedTurn{history: msgs}
	for i := len(msgs) - 1; i >= start; i-- {
		if msgs[i].Role == messages.RoleAssistant {
			t.reply = msgs[i]
			break
		}
	}
	return t
}

// resolver answers item_reference items from the stored turns, each
// session read once per request.
func (g *Gateway) resolver(ctx context.Context, ws *server.Workspace) protocol.Resolver {
	seen := map[string]*storedTurn{}
	return func(id string) (messages.Message, error) {
		_, respID, ok := idSession(id)
		if !ok {
			return messages.Message{}, errors.New("item " + strconv.Quote(id) + " is not one loom made; send the item itself")
		}
		t := seen[respID]
		if t == nil {
			var err error
			if t, err = g.findResponse(ctx, ws, respID); err != nil {
				return messages.Message{}, err
			}
			seen[respID] = t
		}
		r := t.reply
		if strings.HasPrefix(id, "msg_") {
			return messages.Message{Role: messages.RoleAssistant, Content: r.Content}, nil
		}
		i, err := strconv.Atoi(id[strings.LastIndexByte(id, '_')+1:])
		if err != nil || i < 0 || i >= len(r.ToolCalls) {
			return messages.Message{}, errors.New("no function call " + strconv.Quote(id) + " in its response")
		}
		return messages.Message{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{r.ToolCalls[i]}}, nil
	}
}

// callFor makes the upstream call from the decoded turn and the built
// messages (system first), with the fields the upstream's protocol names
// its own way.
func callFor(st *upstream, t *protocol.Turn, b *built) llm.Request {
	req := t.Call
	req.Extra = maps.Clone(t.Call.Extra)
	if req.Extra == nil {
		req.Extra = map[string]json.RawMessage{}
	}
	req.Model = st.cfg.Gateway.UpstreamModel(t.Model, st.lc.Model)
	req.System = b.msgs[0].Content.String()
	req.SystemCacheAt = b.sys.cacheAt()
	req.Messages = b.msgs[1:]
	if st.isAnthro {
		// llm's Anthropic client sends no temperature of its own.
		if req.Temperature != nil {
			req.Extra["temperature"], _ = json.Marshal(*req.Temperature)
		}
		if len(t.Stop) > 0 {
			req.Extra["stop_sequences"], _ = json.Marshal(t.Stop)
		}
		if t.User != "" {
			req.Extra["metadata"], _ = json.Marshal(map[string]string{"user_id": t.User})
		}
		return req
	}
	delete(req.Extra, "top_k") // Chat Completions has none
	if len(t.Stop) > 0 {
		req.Extra["stop"], _ = json.Marshal(t.Stop)
	}
	if t.Parallel != nil && len(req.Tools) > 0 {
		req.Extra["parallel_tool_calls"], _ = json.Marshal(*t.Parallel)
	}
	return req
}

// clientFor is the upstream client for a request: loom's, or one with the
// client's own key under gateway.forward_auth (clientKey's rule), which it
// returns too so that an error echoing it is masked.
func (g *Gateway) clientFor(w http.ResponseWriter, r *http.Request, f front, st *upstream) (llm.Client, string, bool) {
	ck, err := g.clientKey(r, st)
	if err != nil {
		g.fail(w, f, http.StatusForbidden, "forward_auth_refused", "", redact.String(err.Error()))
		return nil, "", false
	}
	if ck == "" {
		return st.turns, "", true
	}
	lc := st.lc
	lc.APIKey, lc.MaxRetries = ck, -1
	c, err := llm.New(lc, llm.WithHTTPClient(g.hc))
	if err != nil {
		return st.turns, "", true
	}
	return c, ck, true
}

// upstreamError answers an upstream's failure in the front's shape: its
// status relayed (a 429 with its Retry-After), 502 when it did not answer.
func (g *Gateway) upstreamError(w http.ResponseWriter, r *http.Request, f front, st *upstream, err error, ck string) {
	var ae *llm.APIError
	if errors.As(err, &ae) {
		if ae.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ae.RetryAfter.Seconds()))))
		}
		msg := redact.Credentials(ae.Message, sentKeys(st, ck)...)
		if msg == "" {
			msg = http.StatusText(ae.StatusCode)
		}
		g.fail(w, f, ae.StatusCode, "upstream_"+strconv.Itoa(ae.StatusCode), "", "upstream "+st.host+": "+msg)
		return
	}
	msg := upstreamMessage(err)
	g.log.Warn("gateway: upstream failed", "request_id", server.RequestID(r), "upstream", st.host, "err", msg)
	g.fail(w, f, http.StatusBadGateway, "upstream_unreachable", "", "upstream "+st.host+" did not answer: "+msg)
}

func upstreamMessage(err error) string {
	var ue *llm.UnreachableError
	if errors.As(err, &ue) {
		if ue.Timeout {
			return "timed out"
		}
		return redact.String(ue.Err.Error())
	}
	return redact.String(err.Error())
}

// sse is a response writer for an event stream: the status line and
// headers go out with the first event, so an error before it is still
// answered with its own status.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	gone    bool
}

func newSSE(w http.ResponseWriter) *sse { return &sse{w: w, rc: http.NewResponseController(w)} }

func (s *sse) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		s.w.WriteHeader(http.StatusOK)
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.gone = true
	}
	return n, err
}

func (s *sse) flush() {
	if s.started && !s.gone {
		s.rc.Flush()
	}
}

func writeJSONBody(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

func (g *Gateway) responses(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	const f = frontOpenAI
	body, ok := g.readBody(w, r, f)
	if !ok {
		return
	}
	st, ok := g.ready(w, r, ws, f)
	if !ok {
		return
	}
	t, err := protocol.DecodeResponses(body, g.resolver(r.Context(), ws))
	if err != nil {
		g.failure(w, r, f, err)
		return
	}
	var history []messages.Message
	prevKey := ""
	if t.PreviousResponseID != "" {
		prev, err := g.findResponse(r.Context(), ws, t.PreviousResponseID)
		if err != nil {
			g.fail(w, f, http.StatusNotFound, "previous_response_not_found", "previous_response_id", err.Error())
			return
		}
		history = prev.history
		prevKey, _, _ = idSession(t.PreviousResponseID)
	}
	q := &request{turnRequest: turnRequest{msgs: append(history, t.Messages...), clientSys: t.System, user: t.User,
		channel: r.Header.Get("X-Loom-Channel")}, stream: t.Stream}
	q.limits(t)
	if !t.NoStore {
		q.key = firstOf(r.Header.Get("X-Loom-Session"), t.Session, prevKey, t.User)
		if q.key == "" {
			var b [6]byte
			rand.Read(b[:])
			q.key = "responses-" + hex.EncodeToString(b[:])
		}
	}
	if err := checkNames(q); err != nil {
		g.failure(w, r, f, err)
		return
	}
	respID := newResponseID(q.key, r.Header.Get("Idempotency-Key"))
	if q.key != "" {
		q.id = respID // the stored turn is found again by its response id
	}
	tn, err := g.prepare(r.Context(), ws, st, &q.turnRequest)
	if err != nil {
		g.failure(w, r, f, err)
		return
	}
	defer tn.release()
	x, ok := g.exchange(w, r, f, st, tn, q, t)
	if !ok {
		return
	}
	meta := protocol.ResponseMeta{ID: respID, CreatedAt: g.opts.Now().Unix(), Model: firstOf(t.Model, x.call.Model), Turn: t}
	g.answer(x, t.Stream, func(resp llm.Response) []byte { return protocol.Response(meta, resp) },
		func(out io.Writer) replyStream { return protocol.NewResponsesStream(out, meta) })
}

func gone(out *sse) string {
	if out.gone {
		return "client disconnected"
	}
	return ""
}

// replyStream is a protocol's event stream for one reply (package
// protocol's ResponsesStream and MessagesStream): the text as it comes,
// then everything but the last event, then the last event, which
// acknowledges the turn, or a failure event instead.
type replyStream interface {
	Text(delta string) error
	Finish(llm.Response) error
	Complete() error
	Fail(code, message string) error
}

// exchange is one prepared turn of the Responses or Messages front end
// and what it needs to call the upstream and answer.
type exchange struct {
	w      http.ResponseWriter
	r      *http.Request
	f      front
	st     *upstream
	tn     *turn
	q      *request
	client llm.Client
	call   llm.Request
	ck     string // the client's key when it is the one sent upstream
}

// exchange makes the upstream call for a prepared turn, picks the client
// that sends it and sets loom's reply headers; it answers and returns
// false when the client's key may not go upstream.
func (g *Gateway) exchange(w http.ResponseWriter, r *http.Request, f front, st *upstream, tn *turn, q *request, t *protocol.Turn) (*exchange, bool) {
	call := callFor(st, t, tn.built)
	client, ck, ok := g.clientFor(w, r, f, st)
	if !ok {
		return nil, false
	}
	g.loomHeaders(w, q, tn.built)
	w.Header().Set("X-Loom-Upstream-Model", call.Model)
	if len(t.ToolsLeftOut) > 0 {
		w.Header().Set("X-Loom-Tools-Left-Out", strings.Join(t.ToolsLeftOut, ", "))
	}
	return &exchange{w: w, r: r, f: f, st: st, tn: tn, q: q, client: client, call: call, ck: ck}, true
}

// answer calls the upstream and answers in the front's protocol: not
// streamed, the whole object (made by object) once the turn is stored;
// streamed, the events as the reply comes, the last one only once the
// turn is stored and a failure event instead when it could not be.
func (g *Gateway) answer(x *exchange, stream bool, object func(llm.Response) []byte, newStream func(io.Writer) replyStream) {
	w, r := x.w, x.r
	if !stream {
		resp, err := x.client.Complete(r.Context(), x.call)
		if err != nil {
			if r.Context().Err() == nil {
				g.upstreamError(w, r, x.f, x.st, err, x.ck)
			}
			return
		}
		if err := x.tn.record(r.Context(), session.Reply{Content: resp.Content, ToolCalls: resp.ToolCalls}); err != nil {
			g.failure(w, r, x.f, err)
			return
		}
		writeJSONBody(w, object(resp))
		return
	}
	out := newSSE(w)
	s := newStream(out)
	resp, err := x.client.Stream(r.Context(), x.call, func(delta string) {
		s.Text(delta)
		out.flush()
	})
	if err != nil {
		g.streamBroke(x, resp, err, out, s)
		return
	}
	s.Finish(resp)
	if err := x.tn.record(r.Context(), session.Reply{Content: resp.Content, ToolCalls: resp.ToolCalls, Cut: gone(out)}); err != nil {
		g.log.Warn("gateway: turn not stored", "request_id", server.RequestID(r), "session", x.q.key, "err", err)
		s.Fail(unstored(err))
	} else {
		s.Complete()
	}
	out.flush()
}

// streamBroke handles a streamed call that failed: before anything was
// written the error is answered with its status and nothing is stored;
// after, the stream ends with the protocol's failure event and what
// arrived is stored marked as cut.
func (g *Gateway) streamBroke(x *exchange, resp llm.Response, err error, out *sse, s replyStream) {
	r := x.r
	if !out.started {
		if r.Context().Err() == nil {
			g.upstreamError(x.w, r, x.f, x.st, err, x.ck)
		}
		return
	}
	cut := "client disconnected"
	if r.Context().Err() == nil {
		msg := "upstream stream broke: " + upstreamMessage(err)
		cut = msg
		s.Fail("upstream_error", msg)
		out.flush()
	}
	if err := x.tn.record(r.Context(), session.Reply{Content: resp.Content, ToolCalls: resp.ToolCalls, Cut: cut}); err != nil {
		g.log.Warn("gateway: turn not stored", "request_id", server.RequestID(r), "session", x.q.key, "err", err)
	}
}

// checkNames checks the session and channel a request names.
func checkNames(q *request) error {
	if q.key != "" && !plainName(q.key) {
		return ferr("X-Loom-Session", "a session id is 1 to 128 letters, digits and - _ . : @, not starting with a dot")
	}
	if q.channel != "" && !plainName(q.channel) {
		return ferr("X-Loom-Channel", "a channel is a plain name")
	}
	if len(q.user) > 4096 {
		return ferr("user", "longer than 4096 bytes")
	}
	return nil
}

// anthropicTurn decodes a Messages API request into the gateway's request:
// the session is X-Loom-Session, else Claude Code's session id (its
// header, or metadata.user_id), else the user.
func anthropicTurn(r *http.Request, body []byte, countOnly bool) (*protocol.Turn, *request, error) {
	t, err := protocol.DecodeMessages(body, countOnly)
	if err != nil {
		return nil, nil, err
	}
	q := &request{turnRequest: turnRequest{msgs: t.Messages, clientSys: t.System, user: t.User, channel: r.Header.Get("X-Loom-Channel"),
		key: firstOf(r.Header.Get("X-Loom-Session"), r.Header.Get("X-Claude-Code-Session-Id"), t.Session, t.User),
		id:  r.Header.Get("Idempotency-Key")}, stream: t.Stream}
	q.limits(t)
	if !plainName(q.user) {
		q.user = "" // not a name loom can keep memories under
	}
	if err := checkNames(q); err != nil {
		return nil, nil, err
	}
	return t, q, nil
}

// anthropicPrepare reads a Messages API request (or a count_tokens one)
// and prepares its turn, answering when it cannot; a count is not a turn,
// so it names no session.
func (g *Gateway) anthropicPrepare(w http.ResponseWriter, r *http.Request, ws *server.Workspace, countOnly bool) (*protocol.Turn, *request, *upstream, *turn, bool) {
	const f = frontAnthropic
	body, ok := g.readBody(w, r, f)
	if !ok {
		return nil, nil, nil, nil, false
	}
	st, ok := g.ready(w, r, ws, f)
	if !ok {
		return nil, nil, nil, nil, false
	}
	t, q, err := anthropicTurn(r, body, countOnly)
	if err != nil {
		g.failure(w, r, f, err)
		return nil, nil, nil, nil, false
	}
	if countOnly {
		q.key = "" // counting is not a turn: no session, no report kept
	}
	tn, err := g.prepare(r.Context(), ws, st, &q.turnRequest)
	if err != nil {
		g.failure(w, r, f, err)
		return nil, nil, nil, nil, false
	}
	return t, q, st, tn, true
}

func (g *Gateway) messagesAPI(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	const f = frontAnthropic
	t, q, st, tn, ok := g.anthropicPrepare(w, r, ws, false)
	if !ok {
		return
	}
	defer tn.release()
	x, ok := g.exchange(w, r, f, st, tn, q, t)
	if !ok {
		return
	}
	var rb [12]byte
	rand.Read(rb[:])
	meta := protocol.MessageMeta{ID: "msg_" + hex.EncodeToString(rb[:]), Model: firstOf(t.Model, x.call.Model)}
	g.answer(x, t.Stream, func(resp llm.Response) []byte { return protocol.Message(meta, resp) },
		func(out io.Writer) replyStream { return protocol.NewMessagesStream(out, meta) })
}

// countTokens answers count_tokens from loom's tokenizer: the tokens of
// what loom would send upstream for this request (loom's prompt with the
// client's system text, the messages' text and tool calls, and the tool
// definitions), counted with the encoding of the configured model. It is
// loom's count, not the provider's, which has its own tokenizer.
func (g *Gateway) countTokens(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	t, _, st, tn, ok := g.anthropicPrepare(w, r, ws, true)
	if !ok {
		return
	}
	defer tn.release()
	b := tn.built
	n := 0
	for _, m := range b.msgs {
		n += st.counter.Count(m.Content.String())
		for _, tc := range m.ToolCalls {
			n += st.counter.Count(tc.Function.Name) + st.counter.Count(tc.Function.Arguments)
		}
	}
	n += toolTokens(st.counter, t.Call.Tools)
	writeJSONBody(w, []byte(`{"input_tokens":`+strconv.Itoa(n)+`}`))
}

// models lists the configured model, the aliases and the upstream's own
// models, in OpenAI's shape or Anthropic's (when the client sends
// anthropic-version).
func (g *Gateway) models(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	f := frontOf(r)
	st, ok := g.ready(w, r, ws, f)
	if !ok {
		return
	}
	list := modelList(st)
	list = appendListed(list, g.upstreamModels(r, st))
	if f == frontAnthropic {
		writeJSONBody(w, protocol.AnthropicModels(list))
		return
	}
	writeJSONBody(w, protocol.OpenAIModels(list))
}

// modelList is the configured model first, then each alias in id order.
func modelList(st *upstream) []protocol.Model {
	var out []protocol.Model
	if st.lc.Model != "" {
		out = append(out, protocol.Model{ID: st.lc.Model})
	}
	for _, k := range sortedKeys(st.cfg.Gateway.Models) {
		if k != st.lc.Model {
			out = append(out, protocol.Model{ID: k, Target: st.cfg.Gateway.Models[k].Model})
		}
	}
	return out
}

// listedModels is an upstream's model list as last asked, or the failure.
type listedModels struct {
	ids   []string
	until time.Time
}

// How long an upstream's model list is kept (a failure for less), and how
// long it may take to answer: /models is what a model picker or a "test
// connection" button calls, so a slow upstream must not hold it up.
const (
	listedFor      = time.Minute
	listFailedFor  = 10 * time.Second
	listingTimeout = 2 * time.Second
)

// upstreamModels is the upstream's own model list, asked with the key a
// turn would send (loom's, or the client's under gateway.forward_auth;
// never loom's own token) and kept briefly per key. Any failure is an
// empty list: the configured model and the aliases are listed anyway.
func (g *Gateway) upstreamModels(r *http.Request, st *upstream) []string {
	ck, err := g.clientKey(r, st)
	if err != nil {
		return nil // the client's key may not go to this upstream
	}
	client := st.turns
	if ck != "" {
		lc := st.lc
		lc.APIKey, lc.MaxRetries = ck, -1
		if client, err = llm.New(lc, llm.WithHTTPClient(g.hc)); err != nil {
			return nil
		}
	}
	lister, ok := client.(llm.ModelLister)
	if !ok {
		return nil
	}
	sum := sha256.Sum256([]byte(ck))
	key := hex.EncodeToString(sum[:])
	now := g.opts.Now()
	st.listedMu.Lock()
	if e, ok := st.listed[key]; ok && now.Before(e.until) {
		st.listedMu.Unlock()
		return e.ids
	}
	st.listedMu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), listingTimeout)
	defer cancel()
	ids, err := lister.Models(ctx)
	until := now.Add(listedFor)
	if err != nil {
		if r.Context().Err() != nil {
			return nil // the client left: nothing learnt about the upstream
		}
		g.log.Info("gateway: the upstream's model list is not available", "upstream", st.host, "err", redact.String(err.Error()))
		ids, until = nil, now.Add(listFailedFor)
	}
	st.listedMu.Lock()
	if st.listed == nil || len(st.listed) >= 64 {
		st.listed = map[string]listedModels{}
	}
	st.listed[key] = listedModels{ids: ids, until: until}
	st.listedMu.Unlock()
	return ids
}

// appendListed adds the upstream's models not already in list, in the
// upstream's order.
func appendListed(list []protocol.Model, ids []string) []protocol.Model {
	seen := make(map[string]bool, len(list))
	for _, m := range list {
		seen[m.ID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			list = append(list, protocol.Model{ID: id})
		}
	}
	return list
}

func isConfigError(err error) bool {
	var ce *config.Error
	return errors.As(err, &ce)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
