package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/gateway/protocol"
	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/internal/redact"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/server"
	"github.com/loomctx/loom/session"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// Options configure a Gateway.
type Options struct {
	// HTTPClient calls the upstream; nil means a client with pooled
	// connections and no overall timeout (a stream lasts as long as it
	// lasts; the client's disconnect cancels it).
	HTTPClient *http.Client
	// Now is the clock of the runtime block and saved messages.
	Now func() time.Time
}

// Gateway is the mounted gateway.
type Gateway struct {
	s    *server.Server
	log  *slog.Logger
	hc   *http.Client
	opts Options

	mu      sync.Mutex
	reports map[string]*LastReport
	sys     [sysRing]*sysEntry // the last system prompts made
	sysNext int
	ups     map[*server.Workspace]*upstream // per workspace, for its current loom.yaml
}

// LastReport is what the gateway built for a session's latest request:
// the render report (every section, what was dropped or cut) and the
// message list's cache report.
type LastReport struct {
	Session string          `json:"session"`
	At      time.Time       `json:"at"`
	Render  prompt.Report   `json:"render"`
	Build   messages.Report `json:"build"`
	// Fit says what fitting the request into the model's context window
	// left out and why.
	Fit *fit.Report `json:"fit,omitempty"`
}

// Mount adds the gateway's routes to s.
func Mount(s *server.Server, opts Options) *Gateway {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	hc := opts.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 256
		tr.WriteBufferSize = 128 << 10
		// A redirect is answered, never followed: following it would send
		// the operator's key to wherever the upstream points.
		hc = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	g := &Gateway{s: s, log: s.Logger(), hc: hc, opts: opts, reports: map[string]*LastReport{},
		ups: map[*server.Workspace]*upstream{}}
	s.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		ws, err := s.Workspace(server.DefaultWorkspace)
		if err != nil {
			writeError(w, http.StatusNotFound, "invalid_request_error", "workspace_not_found", "",
				"no default workspace: this server serves a root of workspaces; use /v1/workspaces/{ws}/chat/completions")
			return
		}
		g.serve(w, r, ws)
	})
	s.HandleWorkspace("POST /v1/workspaces/{ws}/chat/completions", g.serve)
	s.HandleWorkspace("GET /v1/workspaces/{ws}/sessions/{id}/last-report", g.lastReport)
	g.mountProtocols(s)
	return g
}

func (g *Gateway) lastReport(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	g.mu.Lock()
	rep := g.reports[ws.Name+"\x00"+r.PathValue("id")]
	g.mu.Unlock()
	if rep == nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusNotFound, "report_not_found", "no gateway request seen for session %q since the server started", r.PathValue("id")))
		return
	}
	server.WriteJSON(w, http.StatusOK, rep)
}

// request is a decoded chat completions request: its fields as sent, and
// the turn loom prepares from it.
type request struct {
	turnRequest
	fields map[string]json.RawMessage // every field, as sent
	stream bool
}

// field errors name the request field, as OpenAI's do.
type fieldError struct{ param, msg string }

func (e *fieldError) Error() string { return e.param + ": " + e.msg }

func ferr(param, format string, args ...any) error {
	return &fieldError{param, fmt.Sprintf(format, args...)}
}

func plainName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' || c == '@') {
			return false
		}
	}
	return true
}

func decode(r *http.Request, body []byte) (*request, error) {
	q := &request{}
	fields, fast := splitRequest(body)
	if fast {
		q.fields = fields
	} else if err := json.Unmarshal(body, &q.fields); err != nil || q.fields == nil {
		return nil, ferr("", "the request body must be a JSON object")
	}
	// The list is counted first (a list too long is refused unread), the
	// messages decoded one by one into q.msgs, made once at that count.
	list := q.fields["messages"]
	n, more, ok := jsonscan.ArrayLen(list, maxRequestMessages)
	if more {
		return nil, tooManyMessages()
	}
	if !ok || n == 0 {
		return nil, ferr("messages", "must be a non-empty array of messages")
	}
	q.msgs = make([]messages.Message, 0, n)
	if s, ok := q.fields["stream"]; ok && string(s) != "null" {
		if err := json.Unmarshal(s, &q.stream); err != nil {
			return nil, ferr("stream", "must be a boolean")
		}
	}
	if s, ok := q.fields["user"]; ok && string(s) != "null" {
		if err := json.Unmarshal(s, &q.user); err != nil {
			return nil, ferr("user", "must be a string")
		}
	}
	var meta map[string]any
	if s, ok := q.fields["metadata"]; ok && string(s) != "null" {
		if err := json.Unmarshal(s, &meta); err != nil {
			return nil, ferr("metadata", "must be an object")
		}
	}
	str := func(k string) string { v, _ := meta[k].(string); return v }
	if q.user == "" {
		q.user = str("user_id")
	}
	q.chatLimits()
	q.key = firstOf(r.Header.Get("X-Loom-Session"), str("loom_session"), str("session_id"), q.user)
	if q.key != "" && !plainName(q.key) {
		return nil, ferr("X-Loom-Session", "a session id is 1 to 128 letters, digits and - _ . : @, not starting with a dot")
	}
	if len(q.user) > 4096 {
		return nil, ferr("user", "longer than 4096 bytes")
	}
	q.id = r.Header.Get("Idempotency-Key")
	if len(q.id) > 256 {
		return nil, ferr("Idempotency-Key", "longer than 256 bytes")
	}
	q.channel = r.Header.Get("X-Loom-Channel")
	if q.channel != "" && !plainName(q.channel) {
		return nil, ferr("X-Loom-Channel", "a channel is a plain name")
	}
	for i, raw := range jsonscan.Elements(list) {
		// One decode as a message; the slower look at role and content
		// only when that fails, for an error naming the field. It decodes
		// into the list's next place: a message of its own would be one
		// more allocation per message (UnmarshalJSON takes a pointer).
		q.msgs = append(q.msgs, messages.Message{})
		m := &q.msgs[len(q.msgs)-1]
		// raw was checked as JSON with the whole body, so the message's
		// own decoder is called straight away.
		if err := m.UnmarshalJSON(raw); err == nil {
			switch m.Role {
			case messages.RoleSystem, messages.RoleDeveloper:
				q.clientSys = append(q.clientSys, protocol.TextOf(m.Content))
				q.dropLast()
				continue
			case messages.RoleUser, messages.RoleAssistant, messages.RoleTool:
			default:
				return nil, ferr(fmt.Sprintf("messages[%d].role", i), "%q is not one of system, developer, user, assistant, tool", m.Role)
			}
			if m.Role == messages.RoleTool && m.ToolCallID() == "" {
				return nil, ferr(fmt.Sprintf("messages[%d].tool_call_id", i), "a tool message needs tool_call_id")
			}
			continue
		}
		q.dropLast()
		var peek struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &peek); err != nil {
			return nil, ferr(fmt.Sprintf("messages[%d]", i), "must be a message object")
		}
		switch peek.Role {
		case "system", "developer":
			text, err := systemText(peek.Content)
			if err != nil {
				return nil, ferr(fmt.Sprintf("messages[%d].content", i), "%v", err)
			}
			q.clientSys = append(q.clientSys, text)
			continue
		case "user", "assistant", "tool":
		default:
			return nil, ferr(fmt.Sprintf("messages[%d].role", i), "%q is not one of system, developer, user, assistant, tool", peek.Role)
		}
		var full messages.Message
		return nil, ferr(fmt.Sprintf("messages[%d]", i), "%v", json.Unmarshal(raw, &full))
	}
	return q, nil
}

// dropLast takes back the message place decode filled last.
func (q *request) dropLast() {
	q.msgs[len(q.msgs)-1] = messages.Message{}
	q.msgs = q.msgs[:len(q.msgs)-1]
}

// splitRequest reads a request body in one check and one pass: its
// top-level fields as raw values, slices of body (encoding/json checked
// the body, then decoded it into a map, copying each field). fast is
// false for a body that is not a JSON object with distinct keys, which the
// caller decodes with encoding/json for its error
// (FuzzSplitRequestAgrees).
func splitRequest(body []byte) (fields map[string]json.RawMessage, fast bool) {
	if !json.Valid(body) {
		return nil, false
	}
	p := &scan{b: body}
	p.ws()
	if !p.eat('{') {
		return nil, false
	}
	fields = make(map[string]json.RawMessage, 8)
	if !p.members(func(key []byte) bool {
		p.ws()
		start := p.i
		if !p.skip() {
			return false
		}
		if _, dup := fields[string(key)]; dup {
			return false // encoding/json keeps the last; left to it
		}
		fields[string(key)] = body[start:p.i:p.i]
		return true
	}) {
		return nil, false
	}
	return fields, true
}

// systemText is a system message's text: a string, or its text parts.
func systemText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or a list of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	if err := ws.Ready(r.Context()); err != nil {
		g.failure(w, r, frontOpenAI, err)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large", "", "request body larger than %d bytes", mb.Limit)
			return
		}
		return // the client went away
	}
	q, err := decode(r, body)
	if err != nil {
		g.failure(w, r, frontOpenAI, err)
		return
	}
	eng, err := ws.Engine()
	if err != nil {
		var p *server.Problem
		if errors.As(err, &p) && p.Status == http.StatusServiceUnavailable && p.Code != server.CodeStoreUnavailable {
			writeError(w, http.StatusServiceUnavailable, "server_error", "upstream_not_configured", "", "%v", err)
			return
		}
		g.failure(w, r, frontOpenAI, err)
		return
	}
	st := g.upstreamFor(ws, eng)
	if st.err != nil {
		unusable(w, st)
		return
	}
	t, err := g.prepare(r.Context(), ws, st, &q.turnRequest)
	if err != nil {
		g.failure(w, r, frontOpenAI, err)
		return
	}
	defer t.release()
	if st.isAnthro {
		g.forwardAnthropic(w, r, st, q, t)
		return
	}
	if t.body, err = g.openaiBody(q, t.msgs, t.sys, upstreamModel(st, q)); err != nil {
		g.failure(w, r, frontOpenAI, err)
		return
	}
	g.forward(w, r, st, q, t)
}

// upstreamModel is the model a Chat Completions request goes to:
// loom.yaml's llm.model unless gateway.models maps the client's model.
func upstreamModel(st *upstream, q *request) string {
	var client string
	if m, ok := q.fields["model"]; ok {
		json.Unmarshal(m, &client) // a non-string model is the upstream's to refuse
	}
	return st.cfg.Gateway.UpstreamModel(client, st.lc.Model)
}

// built is a request ready for the upstream, with what loom reports about it.
type built struct {
	msgs    []messages.Message // system first
	sys     *sysEntry          // the system prompt, encoded
	body    parts              // for an OpenAI-compatible upstream
	render  *prompt.Result
	report  messages.Report
	fit     *fit.Report // nil when nothing was counted
	dropped int
	brk     string
}

// build makes the message list for the upstream from the client's
// conversation and the rendered prompt: the client's system messages put
// with loom's as loom.yaml says, the runtime block and skills on the last
// user message, a tool loop after it kept as it came. Where fitting drops
// history, its note may quote summaries (nil: none).
func (g *Gateway) build(ctx context.Context, ws *server.Workspace, st *upstream, q *turnRequest, res *prompt.Result, summaries func() []string) (*built, error) {
	opts := messages.Options{Counter: st.counter}
	sys, err := g.systemFor(res, strings.Join(q.clientSys, "\n\n"), st.cfg.Gateway.ClientSystemMode(), st.counter)
	if err != nil {
		return nil, err
	}

	last := -1
	for i, m := range q.msgs {
		if m.Role == messages.RoleUser {
			last = i
		}
	}
	if last < 0 {
		return nil, ferr("messages", "must hold a user message")
	}
	history, _ := messages.Clean(q.msgs[:last], messages.CleanOptions{})
	cur := q.msgs[last]
	text := cur.Content.Text
	var images []messages.Part
	if cur.Content.IsList() {
		var texts []string
		for _, p := range cur.Content.Parts {
			if p.Type == messages.PartText {
				texts = append(texts, p.Text)
			} else {
				images = append(images, p)
			}
		}
		text = strings.Join(texts, "\n")
	}
	set, err := ws.Skills()
	if err != nil {
		return nil, err
	}
	rt := messages.Runtime{Now: g.opts.Now(), Location: st.loc, Channel: q.channel, ChatID: q.key,
		SenderID: q.user, Placement: st.placement}
	// Built with an empty system prompt; the kept one goes in after.
	// With memory.retrieval: relevant, the memories this turn is about
	// go into its runtime block; the system prompt stays the same.
	recall := ws.Builder.Recall(ctx, res, text, messages.PreviousTurn(history))
	b, err := messages.Build(messages.Turn{History: history,
		Message: text, Role: messages.RoleUser, Runtime: rt, Skills: server.SkillExpander{Set: set}, Recall: recall}, opts)
	if err != nil {
		return nil, ferr(fmt.Sprintf("messages[%d]", last), "%v", err)
	}
	if err := sys.completeReport(&b.Report, history, opts); err != nil {
		return nil, err
	}
	final := b.Messages
	final[0].Content = messages.TextContent(sys.system)
	if len(images) > 0 { // the client's images stay first, as it sent them
		lm := &final[len(final)-1]
		parts := append([]messages.Part(nil), images...)
		if lm.Content.IsList() {
			parts = append(parts, lm.Content.Parts...)
		} else {
			parts = append(parts, messages.Part{Type: messages.PartText, Text: lm.Content.Text})
		}
		lm.Content = messages.Content{Parts: parts}
	}
	// A tool loop: the assistant's calls and their results after the
	// user's message go on as they came, huge results cut.
	for _, m := range q.msgs[last+1:] {
		if m.Role == messages.RoleTool && !m.Content.IsList() {
			m.Content.Text = messages.CutToolResult(m.Content.Text, messages.DefaultMaxToolChars)
		}
		final = append(final, m)
	}
	fr, err := g.fitTurn(ctx, ws, st, q, final, summaries, &sys, &res)
	if err != nil {
		return nil, err
	}
	if fr != nil && fr.Report.Changed() {
		// The cache report describes what is sent: the note and the kept
		// history after a (possibly new) system prompt.
		kept := fr.History(history)
		again, err := messages.Build(messages.Turn{History: kept,
			Message: text, Role: messages.RoleUser, Runtime: rt, Skills: server.SkillExpander{Set: set}}, opts)
		if err != nil {
			return nil, err
		}
		if err := sys.completeReport(&again.Report, kept, opts); err != nil {
			return nil, err
		}
		b.Report, final = again.Report, fr.Messages
	}
	out := &built{msgs: final, sys: sys, render: res, report: b.Report}
	if fr != nil {
		out.fit = &fr.Report
	}
	for _, e := range res.Report.Sections() {
		if e.Status == md.Dropped || e.Status == md.Truncated {
			out.dropped++
		}
	}
	if q.key != "" {
		k := ws.Name + "\x00" + q.key
		g.mu.Lock()
		prev := g.reports[k]
		if len(g.reports) >= 4096 {
			clear(g.reports)
		}
		g.reports[k] = &LastReport{Session: q.key, At: rt.Now.UTC(), Render: res.Report, Build: b.Report, Fit: out.fit}
		g.mu.Unlock()
		if prev != nil {
			if d := messages.CacheDiff(prev.Build, b.Report); d.Changed {
				out.brk = d.Section
				if out.brk == "" && d.Message >= 0 {
					out.brk = "message " + strconv.Itoa(d.Message)
				}
				if out.brk == "" {
					out.brk = "prefix"
				}
			}
		}
	}
	return out, nil
}

// openaiBody is the request for an OpenAI-compatible upstream: the
// client's fields as they came with loom's messages and model (the
// client's own when model is ""), in three pieces (the middle one the kept
// encoding of the system message), put together once when sent.
func (g *Gateway) openaiBody(q *request, final []messages.Message, sys *sysEntry, model string) (parts, error) {
	rest, err := appendWire(make([]byte, 0, 1024), final[1:])
	if err != nil {
		return nil, err
	}
	// The body is put together by hand: the client's fields as they came
	// (already valid JSON), in a fixed order, with loom's messages; no
	// second pass over a 100 KB prompt to re-encode it.
	keys := make([]string, 0, len(q.fields)+1)
	for k := range q.fields {
		if k != "messages" && k != "model" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	head := append(make([]byte, 0, 128), `{"model":`...)
	if m, ok := q.fields["model"]; model == "" && ok && string(m) != "null" {
		head = append(head, m...)
	} else {
		mb, _ := json.Marshal(model)
		head = append(head, mb...)
	}
	head = append(head, `,"messages":[`...)
	n := len(rest) + 2
	for _, k := range keys {
		n += len(k) + len(q.fields[k]) + 8
	}
	tail := make([]byte, 0, n)
	tail = append(append(tail, ','), rest[1:]...) // rest is "[...]" with at least the user's message
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		tail = append(tail, ',')
		tail = append(tail, kb...)
		tail = append(tail, ':')
		tail = append(tail, q.fields[k]...)
	}
	tail = append(tail, "}\n"...)
	return parts{head, sys.openai, tail}, nil
}

// parts is a request body in pieces, read in turn.
type parts [][]byte

func (p parts) size() int64 {
	n := 0
	for _, b := range p {
		n += len(b)
	}
	return int64(n)
}

// forward sends the turn to an OpenAI-compatible upstream and relays the
// reply: a whole completion once the turn is stored, a stream's chunks as
// they come and its data: [DONE] once the turn is stored.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, st *upstream, q *request, t *turn) {
	b := t.built
	base, host := st.base, st.host
	up, err := http.NewRequestWithContext(r.Context(), http.MethodPost, base+"/chat/completions", nil)
	if err != nil {
		writeError(w, http.StatusBadGateway, "upstream_error", "upstream_invalid", "", "upstream %s: %v", redact.URL(base), err)
		return
	}
	// Each read gets its own copy of the slice headers; the bytes are shared.
	// One buffer, of a type net/http knows is in memory: it then sends
	// headers and body in one write (in pieces, or with a reader of its
	// own, it flushed the headers alone and copied the body through a
	// fresh 32 KiB buffer: a fifth more CPU per request in bench/gateway).
	buf := bodies.Get().(*[]byte)
	whole := (*buf)[:0]
	if int64(cap(whole)) < b.body.size() {
		whole = make([]byte, 0, b.body.size())
	}
	for _, p := range b.body {
		whole = append(whole, p...)
	}
	up.Body, up.ContentLength = io.NopCloser(bytes.NewReader(whole)), int64(len(whole))
	up.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(whole)), nil }
	// The buffer goes back for the next request once net/http has written
	// it whole (a POST is not sent again after that); a failed write
	// leaves it to the collector.
	var once sync.Once
	up = up.WithContext(httptrace.WithClientTrace(up.Context(), &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil && cap(whole) <= maxPooledBody {
				once.Do(func() { *buf = whole[:0]; bodies.Put(buf) })
			}
		},
	}))
	up.Header.Set("Content-Type", "application/json")
	if q.stream {
		up.Header.Set("Accept", "text/event-stream")
	}
	ck, err := g.clientKey(r, st)
	if err != nil {
		keyRefused(w, err)
		return
	}
	switch {
	case st.lc.APIKey != "":
		up.Header.Set("Authorization", "Bearer "+st.lc.APIKey)
	case ck != "":
		up.Header.Set("Authorization", "Bearer "+ck)
	}
	g.loomHeaders(w, q, b)
	h := w.Header()
	resp, err := g.hc.Do(up)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client left before the upstream answered
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		var ne net.Error
		msg := redact.String(err.Error())
		if errors.As(err, &ne) && ne.Timeout() {
			msg = "timed out"
		}
		g.log.Warn("gateway: upstream unreachable", "request_id", server.RequestID(r), "upstream", redact.URL(base), "err", msg)
		writeError(w, http.StatusBadGateway, "upstream_error", "upstream_unreachable", "", "upstream %s did not answer: %s", host, msg)
		return
	}
	defer resp.Body.Close()
	relayHeaders(h, resp.Header)
	if resp.StatusCode/100 != 2 {
		relayError(w, resp, sentKeys(st, ck)...)
		return
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, err := io.ReadAll(io.LimitReader(resp.Body, replyBodyLimit(st)+1))
		if int64(len(data)) > replyBodyLimit(st) {
			h.Del("Content-Type")
			writeError(w, http.StatusBadGateway, "upstream_error", "reply_too_large", "", "upstream %s: the reply is over %d bytes, the bound for a reply of llm.max_reply_bytes %d; raise it in loom.yaml or LOOM_LLM_MAX_REPLY_BYTES",
				host, replyBodyLimit(st), replyLimit(st))
			return
		}
		rep := reply{limit: replyLimit(st)}
		if err != nil {
			rep.cut = "upstream reply broke: " + redact.String(err.Error())
		} else {
			rep.whole = data
		}
		// The completion goes out once the turn is stored.
		if err := t.record(r.Context(), rep.sessionReply()); err != nil {
			for k := range h {
				if !strings.HasPrefix(k, "X-Loom-") {
					delete(h, k)
				}
			}
			g.failure(w, r, frontOpenAI, err)
			return
		}
		h.Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(resp.StatusCode)
		w.Write(data)
		return
	}
	rep := relayStream(w, r, resp.Body, replyLimit(st))
	err = t.record(r.Context(), rep.sessionReply())
	switch {
	case rep.cut != "":
		// A stream cut short ends without [DONE]: not acknowledged.
	case err != nil:
		g.log.Warn("gateway: turn not stored", "request_id", server.RequestID(r), "session", q.key, "err", err)
		streamFailure(w, err)
	default:
		w.Write([]byte("data: [DONE]\n\n"))
		http.NewResponseController(w).Flush()
	}
}

// loomHeaders sets the X-Loom-* headers of the reply.
func (g *Gateway) loomHeaders(w http.ResponseWriter, q *request, b *built) {
	h := w.Header()
	if b.fit != nil {
		h.Set("X-Loom-Prompt-Tokens", strconv.Itoa(b.fit.Tokens))
		h.Set("X-Loom-History-Dropped", strconv.Itoa(b.fit.Dropped))
	}
	h.Set("X-Loom-Prefix-Sha256", b.report.Prefix.SHA256)
	h.Set("X-Loom-Dropped", strconv.Itoa(b.dropped))
	if b.brk != "" {
		h.Set("X-Loom-Cache-Break", b.brk)
	}
	if q.key != "" {
		h.Set("X-Loom-Session", q.key)
	}
}

// reply is what the upstream answered, gathered for saving.
type reply struct {
	// text is a byte slice, not a strings.Builder: a Builder must not be
	// copied, and a reply is returned by value and then saved from a
	// goroutine.
	text  []byte
	calls []messages.ToolCall
	cut   string
	// What is still to be read into text and calls, by the saver after
	// the reply has gone: a whole completion, or a stream's data lines
	// (each ending in "\n").
	whole  []byte
	events []byte
	limit  int // the most text and tool arguments kept; 0 is no bound
	size   int // text and tool arguments kept so far
	over   bool
	// args gathers a streamed tool call's arguments, put in calls at each
	// parse: one growing buffer, not a string made again per delta.
	args [][]byte
}

// parse reads what the relay kept into text and calls.
func (rp *reply) parse() {
	if rp.whole != nil {
		rp.parseWhole(rp.whole)
		rp.whole = nil
	}
	for ev := rp.events; len(ev) > 0; {
		i := bytes.IndexByte(ev, '\n')
		rp.add(ev[:i])
		ev = ev[i+1:]
	}
	rp.events = nil
	for i, a := range rp.args {
		rp.calls[i].Function.Arguments = string(a)
	}
}

func (rp *reply) parseWhole(data []byte) {
	var out struct {
		Choices []struct {
			Message struct {
				Content   *string             `json:"content"`
				ToolCalls []messages.ToolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &out) != nil || len(out.Choices) == 0 {
		rp.cut = "the upstream's reply could not be read"
		return
	}
	if c := out.Choices[0].Message.Content; c != nil {
		rp.addText([]byte(*c))
	}
	for _, tc := range out.Choices[0].Message.ToolCalls {
		if rp.over {
			break
		}
		tc.Function.Arguments = string(rp.take([]byte(tc.Function.Arguments)))
		rp.calls = append(rp.calls, tc)
	}
}

// chunk is the part of a streamed chunk the gateway reads; the bytes are
// relayed whatever they hold.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
}

// addText keeps a piece of the reply's text, within the bound.
func (rp *reply) addText(c []byte) {
	rp.text = append(rp.text, rp.take(c)...)
}

// take returns what of c fits in the bound, all of it until the bound is
// reached; the piece that crosses it is cut at a character's start and
// the reply marked cut, and nothing is kept after.
func (rp *reply) take(c []byte) []byte {
	if rp.over {
		return nil
	}
	if rp.limit > 0 && rp.size+len(c) > rp.limit {
		n := rp.limit - rp.size
		for n > 0 && !utf8.RuneStart(c[n]) {
			n--
		}
		c = c[:n]
		rp.over, rp.cut = true, cutNote(rp.limit)
	}
	rp.size += len(c)
	return c
}

// maxToolCalls bounds the tool calls kept from one streamed reply.
const maxToolCalls = 128

// maxEventLine bounds one line of the upstream's event stream.
const maxEventLine = 16 << 20

// bodies are the upstream request buffers, reused; one over maxPooledBody
// is not kept.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBody = 4 << 20

// readers are the relay's line readers, reused: 64 KiB each.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// relayStream copies the upstream's event stream to the client line by
// line, flushing at each event's end, and gathers the reply. Past keep
// bytes of text and tool arguments (llm.max_reply_bytes) it stops, as llm's
// client does on the Anthropic wire: the client's stream ends without
// [DONE] and the reply is saved up to the bound, marked cut. An event line
// is bounded by keep plus 64 KiB, and the whole stream by 64 times keep
// plus 1 MiB, so a stream of empty events cannot run for ever either.
func relayStream(w http.ResponseWriter, r *http.Request, body io.Reader, keep int) reply {
	rep := reply{limit: keep}
	lineMax := min(maxEventLine, keep+64<<10)
	rawLeft := 64*int64(keep) + 1<<20
	parseAt := min(1<<20, keep)
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	br := readers.Get().(*bufio.Reader)
	br.Reset(body)
	defer func() { br.Reset(nil); readers.Put(br) }()
	done, dirty := false, false
	var acc []byte
	for {
		// Flush what was written before a read that may wait: events that
		// arrived together go out in one write, and none waits for the
		// next to arrive.
		if dirty {
			if buf, _ := br.Peek(br.Buffered()); bytes.IndexByte(buf, '\n') < 0 {
				rc.Flush()
				dirty = false
			}
		}
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a long line: gather it, within a bound
			acc = append(acc, line...)
			if len(acc) > lineMax {
				rep.cut = "upstream sent an event line over the size bound"
				return rep
			}
			continue
		}
		if acc != nil {
			line, acc = append(acc, line...), nil
		}
		if rawLeft -= int64(len(line)); rawLeft < 0 {
			rc.Flush()
			rep.cut = "upstream stream longer than " + strconv.Itoa(64*keep+1<<20) + " bytes (64 times llm.max_reply_bytes, and 1 MiB)"
			return rep
		}
		if len(line) > 0 && !done {
			trimmed := bytes.TrimRight(line, "\r\n")
			data, isData := bytes.CutPrefix(trimmed, []byte("data:"))
			if isData && string(bytes.TrimSpace(data)) == "[DONE]" {
				// Held back: the caller sends it once the turn is stored.
				done = true
				continue
			}
			if _, werr := w.Write(line); werr != nil {
				rep.cut = "client disconnected"
				return rep
			}
			dirty = true
			if isData {
				rep.events = append(append(rep.events, bytes.TrimSpace(data)...), '\n')
				if len(rep.events) > parseAt { // a long reply: read it as it goes
					rep.parse()
					if rep.over {
						rc.Flush()
						return rep
					}
				}
			}
		}
		if err != nil {
			rc.Flush()
			switch {
			case r.Context().Err() != nil:
				rep.cut = "client disconnected"
			case err != io.EOF:
				rep.cut = "upstream stream broke: " + redact.String(err.Error())
			case !done:
				rep.cut = "upstream stream ended before [DONE]"
			}
			return rep
		}
	}
}

func (rp *reply) add(data []byte) {
	if c, ok := fastContent(data); ok {
		rp.addText(c)
		return
	}
	var c chunk
	if json.Unmarshal(data, &c) != nil {
		return
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.Delta.Content != nil {
			rp.addText([]byte(*ch.Delta.Content))
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxToolCalls {
				continue
			}
			for len(rp.calls) <= tc.Index {
				rp.calls = append(rp.calls, messages.ToolCall{Type: "function"})
				rp.args = append(rp.args, nil)
			}
			call := &rp.calls[tc.Index]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Type != "" {
				call.Type = tc.Type
			}
			call.Function.Name += string(rp.take([]byte(tc.Function.Name)))
			rp.args[tc.Index] = append(rp.args[tc.Index], rp.take([]byte(tc.Function.Arguments))...)
		}
	}
}

// sessionReply is the reply as the session stores it, reading what the
// relay kept first.
func (rp *reply) sessionReply() session.Reply {
	rp.parse()
	return session.Reply{Content: string(rp.text), ToolCalls: rp.calls, Cut: rp.cut}
}
