// Package protocol reads and writes the wire formats the gateway speaks
// besides Chat Completions: OpenAI's Responses API and Anthropic's
// Messages API, the model lists and the error bodies of both. It holds
// codecs only: a request becomes a [Turn] (loom's messages and the
// model call's options), and a model's reply ([llm.Response], or its text
// as it streams) becomes the protocol's object or its event stream. It
// does no I/O beyond the writer it is handed, keeps no state between
// requests and reads no clock: times and ids come from the caller.
//
// Every decoder bounds what it keeps (see [MaxItems]) and answers bad
// input with a [*FieldError] naming the field, as the providers' own
// errors do.
package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
)

// Turn is one inbound request in loom's terms.
type Turn struct {
	// Messages is the conversation as the client sent it, its system
	// text taken out.
	Messages []messages.Message
	// System is the client's own system text, in the order it came.
	System []string
	// Model is the model the client asked for, "" when it named none.
	Model  string
	Stream bool
	// User is whose memories these are ("" when the request says not).
	User string
	// Session is a session the request names in its body, "" when none.
	Session string
	// Call holds the model call's options: tools, tool choice, output
	// schema, token limit, temperature, and in Extra the fields either
	// upstream takes as they are (top_p, top_k).
	Call llm.Request
	// Stop is the stop sequences; Parallel is parallel_tool_calls, nil
	// when unsaid. Their fields differ between upstreams.
	Stop     []string
	Parallel *bool

	// ToolsLeftOut names the tools of the request that loom's upstream
	// cannot take and were left out of the call (the Responses API's
	// provider-run and namespace tools): "web_search", "namespace x".
	ToolsLeftOut []string

	// PreviousResponseID is the Responses API's previous_response_id.
	PreviousResponseID string
	// NoStore is the Responses API's store: false.
	NoStore bool

	blocks int // content blocks and parts decoded so far, within MaxBlocks
}

// decodeList decodes raw, a list of content blocks or parts, into a slice
// made once at its length (encoding/json grows one by appending, which
// allocated some five times its size), after counting the list against
// the request's MaxBlocks: past it, a *FieldError for param and nothing
// decoded. Any other error is encoding/json's, for the caller to word.
func decodeList[T any](t *Turn, param string, raw []byte) ([]T, error) {
	n, err := t.countBlocks(param, raw)
	if err != nil {
		return nil, err
	}
	list := make([]T, 0, n)
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	return list, nil
}

// unmarshalString is json.Unmarshal(raw, s) without its cost for the
// common case, a string with no escape (encoding/json allocates some 140
// bytes a call, more than a short message's text): such a string is
// converted as it is, anything else goes to json.Unmarshal (which leaves
// s unchanged for null).
func unmarshalString(raw []byte, s *string) error {
	p := jsonscan.NewCursor(raw)
	if b, plain := p.PlainString(); plain && p.Pos() == len(raw) {
		*s = string(b)
		return nil
	}
	v := *s // s itself is not handed on, so the caller's string stays off the heap
	err := json.Unmarshal(raw, &v)
	*s = v
	return err
}

// unmarshalRole is unmarshalString for a role: a role messages knows
// (user, assistant, …) is its constant's string, so that the roles of a
// long list allocate nothing.
func unmarshalRole(raw []byte, s *string) error {
	p := jsonscan.NewCursor(raw)
	if b, plain := p.PlainString(); plain && p.Pos() == len(raw) {
		*s = string(messages.InternRole(b))
		return nil
	}
	return unmarshalString(raw, s)
}

// plainMembers calls each with every member of obj, a value already
// checked as JSON, in order: its key and its value's raw JSON. It reports
// false, to send the caller to encoding/json, when obj is not an object, a
// key has an escape, or each returns false. It spares the short items of
// a large request a decoder each (encoding/json allocated more per item
// than a short message's text).
func plainMembers(obj []byte, each func(key, value []byte) bool) bool {
	p := jsonscan.NewCursor(obj)
	if !p.Eat('{') {
		return false
	}
	p.WS()
	if p.Eat('}') {
		return true
	}
	for {
		p.WS()
		key, plain := p.PlainString()
		p.WS()
		if !plain || !p.Eat(':') {
			return false
		}
		p.WS()
		start := p.Pos()
		if !p.Skip() || !each(key, obj[start:p.Pos()]) {
			return false
		}
		p.WS()
		if !p.Eat(',') {
			return true
		}
	}
}

// countBlocks counts list raw's elements into the request's blocks,
// refusing it (a *FieldError for param) past MaxBlocks.
func (t *Turn) countBlocks(param string, raw []byte) (int, error) {
	n, more, _ := jsonscan.ArrayLen(raw, MaxBlocks-t.blocks)
	if more {
		return 0, ferr(param, "more than %d content blocks in one request", MaxBlocks)
	}
	t.blocks += n
	return n, nil
}

// listError is err from decodeList as the caller words it: the bound's
// own error as it is, else a *FieldError for param saying msg.
func listError(err error, param, msg string) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return err
	}
	return ferr(param, "%s", msg)
}

// FieldError is a request the protocol refuses, naming the field at fault
// ("input[2].content[0].image_url"); Param is "" for the body as a whole.
type FieldError struct {
	Param string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Param == "" {
		return e.Msg
	}
	return e.Param + ": " + e.Msg
}

func ferr(param, format string, args ...any) *FieldError {
	return &FieldError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// MaxItems bounds the tools of one request.
const MaxItems = 100_000

// MaxBlocks bounds the content blocks (Messages) or parts (Responses) of
// one request, every list of them together: a decoded block takes some
// 200 bytes, several times a tiny one's text, and past this a list is
// refused before it is decoded.
const MaxBlocks = 20_000

// MaxMessages bounds the messages (Responses input items) of one request,
// as the gateway bounds a Chat Completions request's: a decoded message
// takes 112 bytes before its text (messages.Message), over three times
// what a tiny one takes in the body, and past this the list is refused
// before any is decoded.
const MaxMessages = 10_000

// object reads body as a JSON object, each field kept raw: a slice of
// body, not a copy (encoding/json's map of raw values copied the whole
// body once more).
func object(body []byte) (map[string]json.RawMessage, error) {
	var members []jsonscan.Member
	ok := json.Valid(body)
	if ok {
		members, ok = jsonscan.Object(body)
	}
	if !ok {
		return nil, ferr("", "the request body must be a JSON object")
	}
	f := make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		f[m.Key] = m.Value // a repeated key: the last, as encoding/json does
	}
	return f, nil
}

// has reports whether a field is present and not null.
func has(f map[string]json.RawMessage, k string) bool {
	v, ok := f[k]
	return ok && string(v) != "null"
}

func str(f map[string]json.RawMessage, k string) (string, error) {
	if !has(f, k) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(f[k], &s); err != nil {
		return "", ferr(k, "must be a string")
	}
	return s, nil
}

func boolean(f map[string]json.RawMessage, k string) (bool, error) {
	if !has(f, k) {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(f[k], &b); err != nil {
		return false, ferr(k, "must be a boolean")
	}
	return b, nil
}

func positive(f map[string]json.RawMessage, k string) (int, error) {
	if !has(f, k) {
		return 0, nil
	}
	var n int
	if err := json.Unmarshal(f[k], &n); err != nil || n < 1 {
		return 0, ferr(k, "must be a positive integer")
	}
	return n, nil
}

// number checks a numeric field and passes it on as sent.
func number(f map[string]json.RawMessage, k string, extra map[string]json.RawMessage) (*float64, error) {
	if !has(f, k) {
		return nil, nil
	}
	var x float64
	if err := json.Unmarshal(f[k], &x); err != nil {
		return nil, ferr(k, "must be a number")
	}
	if extra != nil {
		extra[k] = f[k]
	}
	return &x, nil
}

// stringMap reads metadata: an object of strings.
func stringMap(f map[string]json.RawMessage, k string) (map[string]string, error) {
	if !has(f, k) {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(f[k], &m); err != nil {
		return nil, ferr(k, "must be an object of strings")
	}
	return m, nil
}

// imageFromURL reads an image URL as the Chat Completions decoder does: a
// base64 data URL, or a remote image.
func imageFromURL(u string) (*messages.Image, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		if u == "" {
			return nil, errors.New("an image needs a URL")
		}
		return &messages.Image{URL: u}, nil
	}
	mime, data, ok := strings.Cut(rest, ";base64,")
	if !ok || mime == "" {
		return nil, errors.New("data URL is not base64 with a MIME type")
	}
	return &messages.Image{MIME: mime, Data: data}, nil
}

// content makes message content from parts: plain text when the parts are
// one text, else the list.
func content(parts []messages.Part) messages.Content {
	if len(parts) == 1 && parts[0].Type == messages.PartText {
		return messages.TextContent(parts[0].Text)
	}
	if len(parts) == 0 {
		return messages.TextContent("")
	}
	return messages.Content{Parts: parts}
}

// TextOf is a message's text: the text, or its text parts one a line.
func TextOf(c messages.Content) string {
	if !c.IsList() {
		return c.Text
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if p.Type == messages.PartText {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// marshal is json.Marshal without HTML escaping.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("protocol: marshal: " + err.Error()) // only loom's own types are marshalled
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// objectArgs is a tool call's arguments as a JSON object's text: what the
// model sent when it is one, else {} (a model may produce any text).
func objectArgs(args string) json.RawMessage {
	a := bytes.TrimSpace([]byte(args))
	if len(a) == 0 || a[0] != '{' || !json.Valid(a) {
		return json.RawMessage("{}")
	}
	return json.RawMessage(a)
}

// toolFields is how a protocol spells its tool definitions: the type its
// tools carry (and whether it may be left out), the field holding the
// input schema (and whether it must be there), and what to say of a tool
// of another type, or, when leaveOut is set, that such tools are left
// out of the call rather than refused.
type toolFields struct {
	kind          string
	optionalKind  bool
	schema        string
	requireSchema bool
	refuse        string
	leaveOut      bool
}

// decodeTools reads the tools field: a list of tools of one type, each
// with a name, a description and an input schema. A tool of another type
// is refused, or with leaveOut left out and named in left ("web_search",
// "namespace multi_agent_v1").
func decodeTools(f map[string]json.RawMessage, spec toolFields) (out []llm.Tool, left []string, err error) {
	if !has(f, "tools") {
		return nil, nil, nil
	}
	// Both protocols' schema fields are read; the one the protocol names
	// counts.
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	// Counted before decoding, so a list too long is refused unread (200,000
	// tiny tools took 8 to 10 times the body to decode and refuse).
	if _, more, _ := jsonscan.ArrayLen(f["tools"], MaxItems); more {
		return nil, nil, ferr("tools", "more than %d tools", MaxItems)
	}
	if err := json.Unmarshal(f["tools"], &tools); err != nil {
		return nil, nil, ferr("tools", "must be a list of tools")
	}
	out = make([]llm.Tool, 0, len(tools))
	for i, tl := range tools {
		if tl.Type != spec.kind && !(spec.optionalKind && tl.Type == "") {
			if !spec.leaveOut {
				return nil, nil, ferr(fmt.Sprintf("tools[%d].type", i), "%q %s", tl.Type, spec.refuse)
			}
			left = append(left, strings.TrimSpace(tl.Type+" "+tl.Name))
			continue
		}
		if tl.Name == "" {
			return nil, nil, ferr(fmt.Sprintf("tools[%d].name", i), "is required")
		}
		schema := tl.Parameters
		if spec.schema == "input_schema" {
			schema = tl.InputSchema
		}
		schema, err = ToolSchema(schema)
		switch {
		case err != nil:
			return nil, nil, ferr(fmt.Sprintf("tools[%d].%s", i, spec.schema), "%v", err)
		case schema == nil && spec.requireSchema:
			return nil, nil, ferr(fmt.Sprintf("tools[%d].%s", i, spec.schema), "is required")
		}
		out = append(out, llm.Tool{Name: tl.Name, Description: tl.Description, Parameters: schema})
	}
	return out, left, nil
}

// ToolSchema checks a tool's schema as the client sent it: a JSON object,
// or absent (nil; null counts as absent). It is kept as text, never
// decoded into maps, which took 15 to 17 times a body of tools.
func ToolSchema(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, nil
	case raw[0] != '{':
		return nil, errors.New("must be a JSON object (a JSON schema)")
	}
	return raw, nil
}

// writeEvent writes one server-sent event: its type and its data.
func writeEvent(w io.Writer, typ string, data []byte) error {
	line := make([]byte, 0, len(typ)+len(data)+16)
	line = append(line, "event: "...)
	line = append(line, typ...)
	line = append(line, "\ndata: "...)
	line = append(line, data...)
	line = append(line, "\n\n"...)
	_, err := w.Write(line)
	return err
}
