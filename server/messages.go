package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/tokens"
)

// MessagesRequest is the body of POST .../messages: the render options of
// [RenderRequest], plus the turn. It is the JSON form of `loom messages`.
type MessagesRequest struct {
	RenderRequest

	// Message is the current message's text.
	Message string `json:"message"`
	// Role is user (the default) or assistant.
	Role string `json:"role,omitempty"`
	// History is the conversation so far, as OpenAI-style messages.
	History []json.RawMessage `json:"history,omitempty"`
	// SessionID takes the history from this saved session instead (its
	// messages not yet consolidated, cleaned); History must then be empty.
	SessionID string `json:"session_id,omitempty"`
	// Clean applies history hygiene first (runtime blocks removed, images
	// replaced, huge tool results cut, tool calls kept in pairs).
	Clean bool `json:"clean,omitempty"`
	// Format is openai (the default), anthropic or json.
	Format string `json:"format,omitempty"`
	// Placement puts the runtime block before or after (the default) the text.
	Placement string `json:"placement,omitempty"`
	SenderID  string `json:"sender_id,omitempty"`
	// NoRuntime leaves the runtime block out.
	NoRuntime bool `json:"no_runtime,omitempty"`
	// CacheHistory and CacheTTL shape the anthropic format's breakpoints.
	CacheHistory   bool   `json:"cache_history,omitempty"`
	CacheTTL       string `json:"cache_ttl,omitempty"`
	MinCacheTokens int    `json:"min_cache_tokens,omitempty"`

	// history is the history array as it came, when decodeMessagesRequest
	// cut it out of the body instead of decoding it into History, and
	// historyLen its length, counted to one past maxHistory at most.
	history    []byte
	historyLen int
}

// MessagesResponse is one turn's message list in the format asked for,
// with the build report (prefix sha256 and tokens, section and history
// hashes, skills expanded, warnings) and the render's report.
type MessagesResponse struct {
	Format string `json:"format"`
	// Messages holds the list: loom's neutral messages (json), OpenAI Chat
	// Completions messages (openai), or the Anthropic request's system
	// blocks and messages (anthropic).
	Messages any             `json:"messages"`
	Report   messages.Report `json:"report"`
	Render   prompt.Report   `json:"render"`
}

// maxHistory bounds the messages of one request.
const maxHistory = 10_000

// Sections names the top-level sections of a rendered prompt by their byte
// ranges, for messages.Build's cache report.
func Sections(res *prompt.Result) []messages.Section {
	var out []messages.Section
	for _, e := range res.Report.Sections() {
		if e.Start >= 0 && e.End >= e.Start {
			out = append(out, messages.Section{Name: e.Name, Start: e.Start, End: e.End})
		}
	}
	return out
}

// SkillExpander adapts a skill set to messages.SkillExpander.
type SkillExpander struct{ Set *skills.Set }

// Expand implements messages.SkillExpander.
func (s SkillExpander) Expand(text string) (string, []messages.Expansion, error) {
	out, uses := s.Set.Expand(text, 0)
	exps := make([]messages.Expansion, len(uses))
	for i, u := range uses {
		exps[i] = messages.Expansion{Name: u.Name, Ref: u.Ref, Path: u.Path, Cut: u.Cut}
	}
	return out, exps, nil
}

// Counter returns the counter a turn's prefix is counted with: the
// request's encoding or model, else loom.yaml's, else the default. Counters
// are shared per encoding and remember the counts of the last long texts
// (see [MemoCounter]), so a prompt counted once is not counted again.
func Counter(cfg *config.Config, encoding, model string) tokens.Counter {
	if encoding != "" || model != "" {
		cfg = &config.Config{Encoding: encoding, Model: model}
	}
	var c tokens.Counter
	switch {
	case cfg != nil && cfg.Encoding != "":
		c, _ = tokens.Get(cfg.Encoding)
	case cfg != nil && cfg.Model != "":
		c, _ = tokens.ForModel(cfg.Model)
	}
	if c == nil {
		c, _ = tokens.Get(tokens.Default)
	}
	name := tokens.NameOf(c)
	if m, ok := memoCounters.Load(name); ok {
		return m.(tokens.Counter)
	}
	m, _ := memoCounters.LoadOrStore(name, MemoCounter(c))
	return m.(tokens.Counter)
}

var memoCounters sync.Map // encoding name → memo counter

func (s *Server) buildMessages(r *http.Request, ws *Workspace) (any, error) {
	var q MessagesRequest
	if err := decodeMessagesRequest(r, &q); err != nil {
		return nil, err
	}
	switch q.Format {
	case "":
		q.Format = "openai"
	case "openai", "anthropic", "json":
	default:
		return nil, FieldErrorf("format", "must be openai, anthropic or json")
	}
	switch q.Role {
	case "", "user", "assistant":
	default:
		return nil, FieldErrorf("role", "must be user or assistant")
	}
	switch q.Placement {
	case "", "before", "after":
	default:
		return nil, FieldErrorf("placement", "must be before or after")
	}
	switch q.CacheTTL {
	case "", "5m", "1h":
	default:
		return nil, FieldErrorf("cache_ttl", "must be 5m or 1h")
	}
	if q.MinCacheTokens < 0 {
		return nil, FieldErrorf("min_cache_tokens", "must be positive")
	}
	if err := q.checkHistoryLen(); err != nil {
		return nil, err
	}
	if len(q.SenderID) > maxOptionBytes {
		return nil, FieldErrorf("sender_id", "longer than %d bytes", maxOptionBytes)
	}
	if q.Message == "" && q.NoRuntime {
		return nil, FieldErrorf("message", "is empty")
	}
	res, overErr, err := s.renderResult(r, ws, &q.RenderRequest)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(ws.Door)
	if err != nil {
		return nil, Errorf(http.StatusUnprocessableEntity, "config_invalid", "%v", err)
	}
	set, err := s.skillSet(ws)
	if err != nil {
		return nil, err
	}
	rt := messages.Runtime{Channel: q.Channel, ChatID: q.ChatID, SenderID: q.SenderID,
		Placement: messages.Placement(q.Placement), Location: time.UTC, Omit: q.NoRuntime}
	if zone := firstNonEmpty(q.TZ, cfg.Timezone); zone != "" {
		if loc, err := time.LoadLocation(zone); err == nil {
			rt.Location = loc
		}
	}
	if q.Now != "" {
		rt.Now, _ = time.Parse(time.RFC3339, q.Now) // checked by Options
	}
	history, err := q.decodeHistory()
	if err != nil {
		return nil, err
	}
	if q.SessionID != "" {
		if len(history) > 0 {
			return nil, FieldErrorf("session_id", "give the history or a session id, not both")
		}
		if !validKey(q.SessionID) {
			return nil, FieldErrorf("session_id", "a session id is 1 to 128 letters, digits and - _ . : @, not starting with a dot")
		}
		store, err := ws.SessionStore(r.Context())
		if err != nil {
			return nil, err
		}
		st, err := store.Load(r.Context(), q.SessionID)
		if err != nil {
			return nil, err
		}
		history, _ = messages.Clean(st.Unconsolidated(), messages.CleanOptions{})
	}
	if q.Clean {
		history, _ = messages.Clean(history, messages.CleanOptions{})
	}
	turn := messages.Turn{
		System: res.Prompt, SystemSections: Sections(res), History: history,
		Message: q.Message, Role: messages.Role(q.Role), Runtime: rt, Skills: SkillExpander{set},
	}
	if !q.NoRuntime { // memory.retrieval: relevant puts this turn's memories in its runtime block
		turn.Recall = ws.Builder.Recall(r.Context(), res, q.Message, messages.PreviousTurn(history))
	}
	built, err := messages.Build(turn, messages.Options{Counter: Counter(cfg, q.Encoding, q.Model), MinCacheTokens: q.MinCacheTokens})
	if err != nil {
		return nil, buildProblem(err)
	}
	if overErr != nil {
		built.Report.Warnings = append(built.Report.Warnings, overErr.Error())
	}
	out := MessagesResponse{Format: q.Format, Report: built.Report, Render: res.Report}
	switch q.Format {
	case "openai":
		wire, err := built.OpenAI()
		if err != nil {
			return nil, buildProblem(err)
		}
		render, err := ws.reportJSON(res)
		if err != nil {
			return nil, err
		}
		return encodeOpenAI(wire, &out, render)
	case "anthropic":
		if out.Messages, err = built.Anthropic(q.CacheHistory, q.CacheTTL); err != nil {
			return nil, buildProblem(err)
		}
	default:
		out.Messages = built.Messages
	}
	return out, nil
}

// encodeOpenAI writes the response by hand: each message's own encoding
// joined as it is, without encoding/json compacting every message's output
// again (a long system prompt made that most of the route's cost), into a
// buffer reused from one response to the next.
func encodeOpenAI(wire []messages.OpenAIMessage, out *MessagesResponse, render []byte) (pooledJSON, error) {
	buf := jsonBufs.Get().(*bytes.Buffer)
	buf.Reset()
	fail := func(err error) (pooledJSON, error) {
		jsonBufs.Put(buf)
		return pooledJSON{}, err
	}
	buf.WriteString(`{"format":"openai","messages":[`)
	b := buf.AvailableBuffer()
	for i, m := range wire {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = m.AppendJSON(b); err != nil {
			return fail(err)
		}
	}
	buf.Write(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	buf.WriteString(`],"report":`)
	if err := enc.Encode(out.Report); err != nil {
		return fail(err)
	}
	buf.Truncate(buf.Len() - 1) // the Encoder's newline
	buf.WriteString(`,"render":`)
	buf.Write(render) // out.Render, encoded
	buf.WriteString("}\n")
	return pooledJSON{buf}, nil
}

// decodeMessagesRequest is DecodeJSON for a MessagesRequest. The body is
// checked once, and the history array is cut out of it as it is, its
// messages counted but not decoded (decodeHistory decodes each straight
// into the message list, with no list of the raw messages first);
// encoding/json decodes what is left, with the same rules (unknown fields
// refused, one value). Before, encoding/json scanned a 200-message body
// twice and copied every message, about a quarter of the route's CPU. A
// body that is not plain (not a JSON object, a history that is not an
// array, its key repeated or written in another case, which encoding/json
// also accepts) goes to encoding/json whole, for the same result and
// errors (FuzzMessagesRequestDecodesAlike).
func decodeMessagesRequest(r *http.Request, q *MessagesRequest) error {
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
	rest, history, n, ok := cutHistory(body)
	if !ok {
		return decodeBody(body, q)
	}
	if err := decodeBody(rest, q); err != nil {
		return err
	}
	q.history, q.historyLen = history, n
	return nil
}

// cutHistory returns body without its "history" member, that member's
// value, an array, and how many messages it holds, counted to
// maxHistory+1 at most; ok is false when body is not plain (see
// decodeMessagesRequest) or has no history.
func cutHistory(body []byte) (rest, history []byte, n int, ok bool) {
	if !json.Valid(body) {
		return nil, nil, 0, false
	}
	members, ok := jsonscan.Object(body)
	if !ok {
		return nil, nil, 0, false
	}
	rest = append(make([]byte, 0, 256), '{')
	for _, m := range members {
		if strings.EqualFold(m.Key, "history") {
			if m.Key != "history" || history != nil {
				return nil, nil, 0, false
			}
			history = m.Value
			continue
		}
		if len(rest) > 1 {
			rest = append(rest, ',')
		}
		rest = append(append(append(rest, m.RawKey...), ':'), m.Value...)
	}
	if history == nil {
		return nil, nil, 0, false
	}
	if n, _, ok = jsonscan.ArrayLen(history, maxHistory+1); !ok {
		return nil, nil, 0, false
	}
	return append(rest, '}'), history, n, true
}

// checkHistoryLen refuses a history of more than maxHistory messages
// before they are decoded.
func (q *MessagesRequest) checkHistoryLen() error {
	n := len(q.History)
	if q.history != nil {
		n = q.historyLen
	}
	if n > maxHistory {
		return FieldErrorf("history", "more than %d messages", maxHistory)
	}
	return nil
}

// decodeHistory decodes the request's history, cut out of the body or
// decoded by encoding/json, one message at a time, so that an error names
// the message: history[i]; a history too long is refused undecoded
// (checkHistoryLen). A cut history's messages are decoded straight
// into the list, allocated once at its size: a list of the raw messages
// first was 0.8 times the body of a history of tiny messages.
func (q *MessagesRequest) decodeHistory() ([]messages.Message, error) {
	if err := q.checkHistoryLen(); err != nil {
		return nil, err
	}
	if q.history == nil {
		return DecodeHistory(q.History, "history")
	}
	out := make([]messages.Message, q.historyLen)
	for i, m := range jsonscan.Elements(q.history) {
		if err := decodeMessage(&out[i], m, "history", i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DecodeHistory decodes messages one by one, so an error names the
// message: field[i].
func DecodeHistory(raw []json.RawMessage, field string) ([]messages.Message, error) {
	out := make([]messages.Message, len(raw))
	for i, m := range raw {
		if err := decodeMessage(&out[i], m, field, i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeMessage decodes raw, message i of field, into m. The message's
// own decoder checks its input as encoding/json would, without
// encoding/json checking it once more first.
func decodeMessage(m *messages.Message, raw []byte, field string, i int) error {
	if err := m.UnmarshalJSON(raw); err != nil {
		return FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "%v", err)
	}
	return nil
}

// buildProblem names the history message or the current message a build
// refused.
func buildProblem(err error) error {
	var idx int
	if _, e := fmt.Sscanf(err.Error(), "history message %d:", &idx); e == nil {
		return FieldErrorf(fmt.Sprintf("history[%d]", idx), "%v", err)
	}
	if errors.Is(err, messages.ErrEmptyMessage) {
		return FieldErrorf("message", "%v", err)
	}
	return FieldErrorf("message", "%v", err)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
