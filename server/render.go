package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
)

// RenderRequest holds a render's options: the JSON form of `loom render`'s
// flags. Every field is optional.
type RenderRequest struct {
	Preset       string       `json:"preset,omitempty"`
	Channel      string       `json:"channel,omitempty"`
	ChatURL      string       `json:"chat_url,omitempty"`
	Fork         *prompt.Fork `json:"fork,omitempty"`
	Budget       int          `json:"budget,omitempty"`
	Encoding     string       `json:"encoding,omitempty"`
	Model        string       `json:"model,omitempty"`
	TZ           string       `json:"tz,omitempty"`
	Now          string       `json:"now,omitempty"`
	TestMode     bool         `json:"test_mode,omitempty"`
	Tools        []string     `json:"tools,omitempty"` // absent: loom.yaml's, else the analyst's nao default set; [] means none
	Subagent     bool         `json:"subagent,omitempty"`
	User         string       `json:"user,omitempty"`
	ChatID       string       `json:"chat_id,omitempty"`
	MemoryBudget int          `json:"memory_budget,omitempty"`
}

// maxOptionBytes bounds each string option, tool names included.
const maxOptionBytes = 4096

// MaxTools bounds a render's tool names. An agent has tens of tools, a
// few hundred with many MCP servers; a list of 3 million short names
// took 13 times its body to decode.
const MaxTools = 1000

// refuseManyTools refuses a body whose tools list is longer than
// MaxTools before anything is decoded. A body too short to hold such a
// list (each name takes at least 2 bytes) is not looked at.
func refuseManyTools(body []byte) error {
	if len(body) < 2*MaxTools || !json.Valid(body) {
		return nil
	}
	tools, found := jsonscan.Lookup(body, "tools") // the member encoding/json would decode
	if !found {
		return nil
	}
	if _, more, _ := jsonscan.ArrayLen(tools, MaxTools); more {
		return FieldErrorf("tools", "more than %d tools", MaxTools)
	}
	return nil
}

// Options checks the request and turns it into prompt options, naming the
// field at fault.
func (q *RenderRequest) Options() (prompt.Options, error) {
	o := prompt.Options{
		Preset: q.Preset, Channel: q.Channel, ChatURL: q.ChatURL, Fork: q.Fork, Subagent: q.Subagent,
		Timezone: q.TZ, TestMode: q.TestMode, Tools: q.Tools, User: q.User, ChatID: q.ChatID,
		MemoryBudget: q.MemoryBudget, Budget: q.Budget, Encoding: q.Encoding, Model: q.Model,
	}
	// In field order, so that of two fields too long the same one is named
	// every time; an array, so a request allocates nothing for the check.
	for _, f := range [...]struct{ name, v string }{{"preset", q.Preset}, {"channel", q.Channel},
		{"chat_url", q.ChatURL}, {"encoding", q.Encoding}, {"model", q.Model}, {"tz", q.TZ}, {"now", q.Now},
		{"user", q.User}, {"chat_id", q.ChatID}} {
		if len(f.v) > maxOptionBytes {
			return o, FieldErrorf(f.name, "longer than %d bytes", maxOptionBytes)
		}
	}
	if len(q.Tools) > MaxTools {
		return o, FieldErrorf("tools", "more than %d tools", MaxTools)
	}
	for _, t := range q.Tools {
		if len(t) > maxOptionBytes {
			return o, FieldErrorf("tools", "a tool name longer than %d bytes", maxOptionBytes)
		}
	}
	switch {
	case q.Budget < 0:
		return o, FieldErrorf("budget", "must be a positive number of tokens")
	case q.MemoryBudget < 0:
		return o, FieldErrorf("memory_budget", "must be a positive number of tokens")
	case q.Encoding != "" && q.Model != "":
		return o, FieldErrorf("encoding", "encoding and model cannot be used together")
	case q.Preset != "" && q.Preset != prompt.Assistant && q.Preset != prompt.Analyst:
		return o, FieldErrorf("preset", "must be %s or %s", prompt.Assistant, prompt.Analyst)
	case strings.ContainsAny(q.Channel, "/\\\x00") || strings.HasPrefix(q.Channel, "."):
		return o, FieldErrorf("channel", "must be a plain name")
	}
	if q.Encoding != "" {
		if _, err := tokens.Get(q.Encoding); err != nil {
			return o, FieldErrorf("encoding", "%v", err)
		}
	}
	if q.TZ != "" {
		if _, err := time.LoadLocation(q.TZ); err != nil || strings.Contains(q.TZ, "..") {
			return o, FieldErrorf("tz", "unknown time zone %q", q.TZ)
		}
	}
	if q.Now != "" {
		t, err := time.Parse(time.RFC3339, q.Now)
		if err != nil {
			return o, FieldErrorf("now", "must be an RFC 3339 time: %v", err)
		}
		o.Now = t
	}
	if q.Fork != nil && len(q.Fork.Title)+len(q.Fork.Author)+len(q.Fork.Selection) > 64<<10 {
		return o, FieldErrorf("fork", "longer than 64 KiB")
	}
	return o, nil
}

// RenderResponse is a render's result: the prompt and the report, in the
// shape of `loom render --format json`, plus over_budget when even
// dropping everything droppable left the prompt over its budget.
type RenderResponse struct {
	*prompt.Result
	OverBudget string `json:"over_budget,omitempty"`
}

// decodeOptional decodes a JSON body into v, taking an empty body as {}.
func decodeOptional(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return DecodeJSON(r, v)
}

// Render renders ws's prompt for the request's options, from the builder's
// cache when nothing changed.
func (s *Server) renderResult(r *http.Request, ws *Workspace, q *RenderRequest) (*prompt.Result, error, error) {
	o, err := q.Options()
	if err != nil {
		return nil, nil, err
	}
	// The workspace's store is chosen before its first render (see
	// prepare), so a PostgreSQL workspace's prompt reads its memories
	// from there.
	if err := ws.prepare(r.Context()); err != nil {
		return nil, nil, err
	}
	res, err := ws.Builder.Render(r.Context(), o)
	var over *md.OverBudgetError
	if err != nil && errors.Is(err, memory.ErrUnavailable) {
		return nil, nil, storeProblem(err)
	}
	if err != nil && !errors.As(err, &over) {
		return nil, nil, Errorf(http.StatusUnprocessableEntity, "render_failed", "%v", err)
	}
	return res, err, nil
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, ws *Workspace) {
	var q RenderRequest
	if err := decodeRenderRequest(r, &q); err != nil {
		WriteProblem(w, r, err)
		return
	}
	res, overErr, err := s.renderResult(r, ws, &q)
	if err != nil {
		WriteProblem(w, r, err)
		return
	}
	enc, hit, err := ws.encodeRender(res, overErr)
	if err != nil {
		s.reply(w, r, nil, err)
		return
	}
	if hit {
		s.metrics.renderHit.Inc()
	} else {
		s.metrics.renderMiss.Inc()
	}
	h := w.Header()
	h.Set("ETag", enc.etag)
	h.Set("Cache-Control", "no-cache")
	if etagMatch(r.Header.Get("If-None-Match"), enc.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, http.StatusOK, enc.body)
}

// decodeRenderRequest is decodeOptional for a RenderRequest, remembering
// the last bodies it decoded: an agent asks for the same options turn
// after turn, and a warm render's answer is already encoded, so decoding
// the body with encoding/json was a tenth of the route's CPU. A body is
// its own key (the same bytes decode the same way); what is kept is
// copied out, never shared.
func decodeRenderRequest(r *http.Request, q *RenderRequest) error {
	if r.ContentLength == 0 {
		return nil
	}
	if err := checkJSONType(r); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return decodeProblem(err)
	}
	if err := refuseManyTools(body); err != nil {
		return err
	}
	keep := len(body) <= maxKeptRenderBody
	if keep {
		renderBodies.Lock()
		v, ok := renderBodies.m[string(body)]
		renderBodies.Unlock()
		if ok {
			*q = v.clone()
			return nil
		}
	}
	if err := decodeBody(body, q); err != nil {
		return err
	}
	if keep {
		renderBodies.Lock()
		if len(renderBodies.m) >= maxKeptRenderBodies {
			clear(renderBodies.m)
		}
		renderBodies.m[string(body)] = q.clone()
		renderBodies.Unlock()
	}
	return nil
}

// renderBodies are the last render request bodies decoded, at most
// maxKeptRenderBodies of up to maxKeptRenderBody bytes each.
var renderBodies = struct {
	sync.Mutex
	m map[string]RenderRequest
}{m: map[string]RenderRequest{}}

const (
	maxKeptRenderBodies = 64
	maxKeptRenderBody   = 1024
)

// clone copies the request with its own Tools and Fork.
func (q RenderRequest) clone() RenderRequest {
	if q.Tools != nil {
		q.Tools = append([]string{}, q.Tools...)
	}
	if q.Fork != nil {
		f := *q.Fork
		q.Fork = &f
	}
	return q
}

// encodeRender returns the encoded body and ETag of a result, from a cache
// keyed by the result's identity: the builder returns the same *Result
// while nothing changed, so a warm render costs no encoding.
func (ws *Workspace) encodeRender(res *prompt.Result, overErr error) (*encoded, bool, error) {
	ws.mu.Lock()
	e, ok := ws.rendered[res]
	ws.mu.Unlock()
	if ok {
		return e, true, nil
	}
	resp := RenderResponse{Result: res}
	if overErr != nil {
		resp.OverBudget = overErr.Error()
	}
	body, err := marshal(resp)
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256([]byte(res.Prompt))
	e = &encoded{body: body, etag: `"` + hex.EncodeToString(sum[:]) + `"`}
	ws.mu.Lock()
	if len(ws.rendered) >= 32 { // results of option sets no longer asked for
		clear(ws.rendered)
	}
	ws.rendered[res] = e
	ws.mu.Unlock()
	return e, false, nil
}

// reportJSON returns the JSON of a result's report, from a cache keyed by
// the result's identity as encodeRender's is: POST .../messages sends the
// render's report with every turn, and encoding it (a prompt.Report with
// its own encoder, then compacted by encoding/json) was a fifth of the
// route's CPU on a large workspace.
func (ws *Workspace) reportJSON(res *prompt.Result) ([]byte, error) {
	ws.mu.Lock()
	b, ok := ws.reports[res]
	ws.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := marshal(res.Report)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	ws.mu.Lock()
	if ws.reports == nil || len(ws.reports) >= 32 {
		ws.reports = map[*prompt.Result][]byte{}
	}
	ws.reports[res] = b
	ws.mu.Unlock()
	return b, nil
}

// etagMatch reports whether an If-None-Match header matches etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// TokensRequest is the body of POST /v1/tokens.
type TokensRequest struct {
	Text     string `json:"text"`
	Encoding string `json:"encoding,omitempty"`
	Model    string `json:"model,omitempty"`
}

// TokensResponse is the shape of `loom tokens --json`.
type TokensResponse struct {
	Encoding string `json:"encoding"`
	Tokens   int    `json:"tokens"`
	Bytes    int    `json:"bytes"`
	Model    string `json:"model,omitempty"`
	Fallback bool   `json:"fallback,omitempty"`
}

func (s *Server) countTokens(r *http.Request) (any, error) {
	var q TokensRequest
	if err := DecodeJSON(r, &q); err != nil {
		return nil, err
	}
	res := TokensResponse{Encoding: tokens.Default, Bytes: len(q.Text)}
	var c tokens.Counter
	switch {
	case q.Encoding != "" && q.Model != "":
		return nil, FieldErrorf("encoding", "encoding and model cannot be used together")
	case q.Model != "":
		if len(q.Model) > maxOptionBytes {
			return nil, FieldErrorf("model", "longer than %d bytes", maxOptionBytes)
		}
		var rz tokens.Resolution
		c, rz = tokens.ForModel(q.Model)
		res.Encoding, res.Model, res.Fallback = rz.Encoding, q.Model, rz.Fallback
	case q.Encoding != "":
		var err error
		if c, err = tokens.Get(q.Encoding); err != nil {
			return nil, FieldErrorf("encoding", "%v", err)
		}
		res.Encoding = q.Encoding
	default:
		c, _ = tokens.Get(tokens.Default)
	}
	res.Tokens = c.Count(q.Text)
	return res, nil
}
