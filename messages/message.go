// Package messages builds the message list for one turn of an agent: the
// system prompt, the replayed history and the current message with its
// runtime context and images. It keeps the prefix a provider caches (system
// prompt plus history) byte-stable from turn to turn, cleans what an agent
// persists, and writes the list in OpenAI and Anthropic form.
package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"
)

// Role is who speaks a message.
type Role string

// The roles loom knows. System appears only as the first message of a
// built turn, never in history.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	// RoleDeveloper is OpenAI's newer name for system instructions. loom
	// passes it through to OpenAI-style endpoints, sends it to Anthropic
	// as user text, and never keeps it in history.
	RoleDeveloper Role = "developer"
)

// Message is loom's one chat message type: provider-neutral, used for
// history, sessions, a built turn and a model request alike. Its JSON form
// is the OpenAI Chat Completions message, plus reasoning_content for the
// reasoning text some providers return and want replayed, "timestamp" for
// Time, and any other keys kept as they came (see Extra).
//
// The fields few messages carry (a tool result's call id, a name,
// reasoning text, the unmodelled keys) are read with methods (ToolCallID,
// Name, Reasoning, Extra) and set with their With methods: they live behind
// one pointer, so that a message is 112 bytes, not 160. A request or a
// session holds messages by the ten thousand, and a short one's JSON is
// some 32 bytes: the bigger struct alone made decoding a request of tiny
// messages take five times its body.
type Message struct {
	Role      Role
	Content   Content
	ToolCalls []ToolCall
	// Time is when the message was said; zero when unknown. Its JSON key
	// is "timestamp": RFC 3339 on write; a time without a zone (as nanobot
	// writes it: its machine's local time) counts as UTC and is written
	// back without a zone, as it came. It stays inline: a session's
	// messages nearly all carry one.
	Time time.Time
	// rare holds the fields few messages carry. It is nil when they are
	// all empty, so that two messages with the same fields are equal
	// (reflect.DeepEqual) however they were built, and it is shared by a
	// message's copies, so it is never changed in place: the With methods
	// make a new one.
	rare *rare
}

// rare is the part of a Message few messages carry (see Message).
type rare struct {
	toolCallID string
	name       string
	reasoning  string
	extra      map[string]json.RawMessage
}

func (r *rare) empty() bool {
	return r.toolCallID == "" && r.name == "" && r.reasoning == "" && len(r.extra) == 0
}

// ToolCallID is the id of the tool call a tool message answers.
func (m Message) ToolCallID() string {
	if m.rare == nil {
		return ""
	}
	return m.rare.toolCallID
}

// Name is the message's "name": the tool's name on a tool message, or a
// participant's name.
func (m Message) Name() string {
	if m.rare == nil {
		return ""
	}
	return m.rare.name
}

// Reasoning is the reasoning text an assistant message came with, which
// some providers want replayed (JSON key "reasoning_content").
func (m Message) Reasoning() string {
	if m.rare == nil {
		return ""
	}
	return m.rare.reasoning
}

// Extra holds the JSON keys loom does not model, with their values as
// they came, so a message from nanobot, a gateway client or another tool
// is written back with them; nil when there are none. The provider
// encoders leave them out unless asked (see OpenAIOptions.KeepExtra). The
// map is shared with the message's copies: read it, and set a changed
// copy with WithExtra.
func (m Message) Extra() map[string]json.RawMessage {
	if m.rare == nil {
		return nil
	}
	return m.rare.extra
}

// WithToolCallID is m with ToolCallID id; m and its copies are left as
// they were.
func (m Message) WithToolCallID(id string) Message {
	r := m.rareCopy()
	r.toolCallID = id
	m.setRare(r)
	return m
}

// WithName is m with Name name; m and its copies are left as they were.
func (m Message) WithName(name string) Message {
	r := m.rareCopy()
	r.name = name
	m.setRare(r)
	return m
}

// WithReasoning is m with Reasoning text; m and its copies are left as
// they were.
func (m Message) WithReasoning(text string) Message {
	r := m.rareCopy()
	r.reasoning = text
	m.setRare(r)
	return m
}

// WithExtra is m with Extra extra, which it keeps (the caller does not
// change the map afterwards); m and its copies are left as they were. An
// empty map is kept as nil.
func (m Message) WithExtra(extra map[string]json.RawMessage) Message {
	r := m.rareCopy()
	r.extra = extra
	if len(extra) == 0 {
		r.extra = nil
	}
	m.setRare(r)
	return m
}

// rareCopy is a copy of m's rare fields, for a With method to change.
func (m *Message) rareCopy() rare {
	if m.rare == nil {
		return rare{}
	}
	return *m.rare
}

// setRare points m at a new rare holding r, or at none when r is empty.
// The one it pointed at is left as it was: copies of m may share it.
func (m *Message) setRare(r rare) {
	if r.empty() {
		m.rare = nil
		return
	}
	p := new(rare) // allocated here only, not for every call (&r would be)
	*p = r
	m.rare = p
}

// InternRole is the role named by s, a role string as it came: one of
// the Role constants when s names one, so that decoding the roles of ten
// thousand messages allocates no string for them, else a new string.
func InternRole(s []byte) Role {
	if r, ok := knownRole(s); ok {
		return r
	}
	return Role(s)
}

// knownRole is the Role constant s names; ok is false for any other s.
func knownRole(s []byte) (Role, bool) {
	switch string(s) {
	case string(RoleUser):
		return RoleUser, true
	case string(RoleAssistant):
		return RoleAssistant, true
	case string(RoleTool):
		return RoleTool, true
	case string(RoleSystem):
		return RoleSystem, true
	case string(RoleDeveloper):
		return RoleDeveloper, true
	}
	return "", false
}

// Content is a message's content: plain text, or a list of parts when
// Parts is non-nil.
type Content struct {
	Text  string
	Parts []Part
}

// PartType names a content part.
type PartType string

// The part types loom reads and writes.
const (
	PartText  PartType = "text"
	PartImage PartType = "image_url"
)

// Part is one piece of list content: text, or an image.
type Part struct {
	Type  PartType
	Text  string
	Image *Image
}

// Image is an image part. Data holds base64 bytes with their MIME type; URL
// holds a remote image when Data is empty.
type Image struct {
	MIME string
	Data string
	URL  string
}

// ToolCall is one function call an assistant message asks for.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's function name and JSON arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// NewToolCall returns a function call with the given id, name and JSON
// argument text.
func NewToolCall(id, name, arguments string) ToolCall {
	return ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: name, Arguments: arguments}}
}

// TextContent returns plain text content.
func TextContent(s string) Content { return Content{Text: s} }

// IsList reports whether the content is a list of parts.
func (c Content) IsList() bool { return c.Parts != nil }

// IsEmpty reports whether the content carries no text and no parts.
func (c Content) IsEmpty() bool {
	if c.Parts != nil {
		return len(c.Parts) == 0
	}
	return c.Text == ""
}

// String returns the content's text: the text itself, or the text parts
// joined by blank lines, with "[image]" for each image.
func (c Content) String() string {
	if c.Parts == nil {
		return c.Text
	}
	var b strings.Builder
	for i, p := range c.Parts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if p.Type == PartImage {
			b.WriteString(imagePlaceholder)
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// URLString returns the image as the URL OpenAI takes: a base64 data URL,
// or the remote URL.
func (im *Image) URLString() string {
	if im.Data == "" {
		return im.URL
	}
	return "data:" + im.MIME + ";base64," + im.Data
}

// clone returns a deep copy, so a built turn never aliases its input.
func (m Message) clone() Message {
	if m.Content.Parts != nil {
		parts := make([]Part, len(m.Content.Parts))
		copy(parts, m.Content.Parts)
		m.Content.Parts = parts
	}
	if m.ToolCalls != nil {
		m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
	}
	if extra := m.Extra(); extra != nil {
		m = m.WithExtra(maps.Clone(extra))
	}
	return m
}

type wirePart struct {
	Type     PartType `json:"type"`
	Text     *string  `json:"text,omitempty"`
	ImageURL *wireURL `json:"image_url,omitempty"`
}

type wireURL struct {
	URL string `json:"url"`
}

// MarshalJSON writes the OpenAI chat form, then "timestamp" when Time is
// set and the Extra keys in key order. Content is null for an assistant
// message that only calls tools. Text keeps <, > and & unescaped.
func (m Message) MarshalJSON() ([]byte, error) {
	return appendMessage(nil, m)
}

// UnmarshalJSON reads the OpenAI chat form: content as a string, null, or a
// list of text and image_url parts. Unknown keys go to Extra; a timestamp
// that is not a time is kept there too, unchanged. It does not check the
// role; the history parser does.
func (m *Message) UnmarshalJSON(data []byte) error {
	if fast, ok := decodeFast(data); ok {
		*m = fast
		return nil
	}
	return m.unmarshalFull(data)
}

// unmarshalFull is UnmarshalJSON for every shape: encoding/json reads the
// object into raw fields first.
func (m *Message) unmarshalFull(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	if fields == nil {
		return errors.New("message is null")
	}
	*m = Message{}
	var r rare
	for key, raw := range fields {
		var err error
		switch key {
		case "role":
			err = json.Unmarshal(raw, &m.Role)
		case "content":
			if err := m.Content.unmarshal(raw); err != nil {
				return err
			}
		case "tool_calls":
			err = json.Unmarshal(raw, &m.ToolCalls)
		case "tool_call_id":
			err = json.Unmarshal(raw, &r.toolCallID)
		case "name":
			err = json.Unmarshal(raw, &r.name)
		case "reasoning_content":
			err = json.Unmarshal(raw, &r.reasoning)
		case "timestamp":
			if t, ok := parseTimestamp(raw); ok {
				m.Time = t
				continue
			}
			fallthrough
		default:
			if r.extra == nil {
				r.extra = make(map[string]json.RawMessage)
			}
			r.extra[key] = raw
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	m.setRare(r)
	return checkToolCalls(m.ToolCalls)
}

// checkToolCalls refuses a tool call without id or function name and
// gives one without a type the type "function".
func checkToolCalls(calls []ToolCall) error {
	for i, tc := range calls {
		if tc.ID == "" || tc.Function.Name == "" {
			return fmt.Errorf("tool call %d: id and function name are required", i)
		}
		if tc.Type == "" {
			calls[i].Type = "function"
		}
	}
	return nil
}

func (c *Content) unmarshal(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &c.Text); err != nil {
			return fmt.Errorf("content: %w", err)
		}
	case raw[0] == '[':
		var parts []wirePart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return fmt.Errorf("content: %w", err)
		}
		c.Parts = make([]Part, 0, len(parts))
		for i, p := range parts {
			part, err := p.part()
			if err != nil {
				return fmt.Errorf("content part %d: %w", i, err)
			}
			c.Parts = append(c.Parts, part)
		}
	default:
		return errors.New("content: want a string, null or a list of parts")
	}
	return nil
}

// timestampLayouts are the forms a message time is read in: RFC 3339, and
// Python's isoformat() without a zone (what nanobot writes: its machine's
// local time, zone unsaid), which is read in zoneless.
var timestampLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"}

// zoneless is the location of a time that was written without a zone. It
// counts as UTC wherever times are compared, but is written back as it
// came, without a zone (see appendTime), so that cleaning or rewriting a
// nanobot session does not relabel its local times as UTC.
// zonelessSpaced is zoneless for a time written with a space between date
// and time (Python's str()), written back the same way.
var (
	zoneless       = sync.OnceValue(func() *time.Location { return time.FixedZone("", 0) })
	zonelessSpaced = sync.OnceValue(func() *time.Location { return time.FixedZone(" ", 0) })
)

func parseTimestamp(raw json.RawMessage) (time.Time, bool) {
	var s string
	if string(raw) == "null" {
		return time.Time{}, true
	}
	if json.Unmarshal(raw, &s) != nil {
		return time.Time{}, false
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	if t, err := time.ParseInLocation(timestampLayouts[1], s, zoneless()); err == nil {
		return t, true
	}
	if t, err := time.ParseInLocation(timestampLayouts[2], s, zonelessSpaced()); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// appendTime writes t as a message's timestamp: RFC 3339, or, for a time
// read without a zone, as Python's isoformat() writes it (no zone, and
// microseconds only when there are any; nanoseconds when there are more).
func appendTime(dst []byte, t time.Time) []byte {
	switch t.Location() {
	case zoneless():
		dst = t.AppendFormat(dst, "2006-01-02T15:04:05")
	case zonelessSpaced():
		dst = t.AppendFormat(dst, "2006-01-02 15:04:05")
	default:
		return t.AppendFormat(dst, time.RFC3339Nano)
	}
	switch ns := t.Nanosecond(); {
	case ns%1000 != 0: // not Python's, but nothing is lost
		dst = fmt.Appendf(dst, ".%09d", ns)
	case ns != 0:
		dst = fmt.Appendf(dst, ".%06d", ns/1000)
	}
	return dst
}

func (p wirePart) part() (Part, error) {
	switch p.Type {
	case PartText:
		if p.Text == nil {
			return Part{}, errors.New("text part without text")
		}
		return Part{Type: PartText, Text: *p.Text}, nil
	case PartImage:
		if p.ImageURL == nil || p.ImageURL.URL == "" {
			return Part{}, errors.New("image_url part without url")
		}
		im, err := parseImageURL(p.ImageURL.URL)
		if err != nil {
			return Part{}, err
		}
		return Part{Type: PartImage, Image: im}, nil
	case "":
		return Part{}, errors.New("part without type")
	default:
		return Part{}, fmt.Errorf("unsupported part type %q (want text or image_url)", p.Type)
	}
}

// parseImageURL splits a base64 data URL into MIME type and data; any other
// URL is kept as a remote image.
func parseImageURL(u string) (*Image, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return &Image{URL: u}, nil
	}
	mime, data, ok := strings.Cut(rest, ";base64,")
	if !ok || mime == "" {
		return nil, errors.New("data URL is not base64 with a MIME type")
	}
	return &Image{MIME: mime, Data: data}, nil
}

// marshal is json.Marshal without HTML escaping, so text keeps its <, > and
// & readable, and without the trailing newline of an Encoder.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
