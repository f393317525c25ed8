package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/loomctx/loom/messages"
)

// anthropicVersion is the Messages API version loom speaks.
const anthropicVersion = "2023-06-01"

// anthropicClient speaks the Anthropic Messages API over net/http.
type anthropicClient struct {
	t   *transport
	sys systemCache
}

type anthropicRequest struct {
	Model        string                      `json:"model"`
	MaxTokens    int                         `json:"max_tokens"`
	System       []messages.AnthropicBlock   `json:"system,omitempty"`
	Messages     []messages.AnthropicMessage `json:"messages"`
	Tools        []anthropicTool             `json:"tools,omitempty"`
	ToolChoice   *anthropicToolChoice        `json:"tool_choice,omitempty"`
	OutputConfig *anthropicOutputConfig      `json:"output_config,omitempty"`
	Stream       bool                        `json:"stream,omitempty"`
}

var anthropicKeys = map[string]bool{"model": true, "max_tokens": true, "system": true, "messages": true, "tools": true,
	"tool_choice": true, "output_config": true, "stream": true}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type anthropicOutputConfig struct {
	Format struct {
		Type   string         `json:"type"`
		Schema map[string]any `json:"schema"`
	} `json:"format"`
}

// anthropicInput makes a request's messages acceptable to the Messages
// API, which is stricter than Chat Completions: the system prompt first, a
// stray system message sent as user text, empty turns dropped, and tool
// arguments that are not a JSON object (a model may produce any text)
// sent as {}.
func anthropicInput(req Request) []messages.Message {
	out := make([]messages.Message, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, messages.Message{Role: messages.RoleSystem, Content: messages.TextContent(req.System)})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case messages.RoleTool:
		case messages.RoleAssistant:
			if m.Content.IsEmpty() && len(m.ToolCalls) == 0 {
				continue
			}
		default:
			m.Role = messages.RoleUser
			m.ToolCalls = nil
			if m.Content.IsEmpty() {
				continue
			}
		}
		if len(m.ToolCalls) > 0 {
			calls := slices.Clone(m.ToolCalls)
			for i, tc := range calls {
				args := bytes.TrimSpace([]byte(tc.Function.Arguments))
				if !json.Valid(args) || len(args) == 0 || args[0] != '{' {
					calls[i].Function.Arguments = "{}"
				}
			}
			m.ToolCalls = calls
		}
		out = append(out, m)
	}
	return out
}

// body is the request body: the system blocks' encoding kept (see
// systemCache), put in before the messages of the rest, encoded now.
func (a *anthropicClient) body(req Request, stream bool) ([]byte, error) {
	p, err := a.request(req, stream)
	if err != nil {
		return nil, err
	}
	if len(p.System) == 0 {
		return a.encode(p, req)
	}
	sys, err := a.sys.get(req.System, req.SystemCacheAt, func() ([]byte, error) { return json.Marshal(p.System) })
	if err != nil {
		return nil, err
	}
	p.System = nil
	data, err := a.encode(p, req)
	if err != nil {
		return nil, err
	}
	i := keyAfter(data, "messages")
	if i < 0 {
		return nil, fmt.Errorf("llm: request: no messages list in the body")
	}
	i -= len(`,"messages":`)
	return insertAt(data, i, []byte(`,"system":`), sys), nil
}

// bodyPlain is the request body encoded in one pass, the system blocks
// with the rest.
func (a *anthropicClient) bodyPlain(req Request, stream bool) ([]byte, error) {
	p, err := a.request(req, stream)
	if err != nil {
		return nil, err
	}
	return a.encode(p, req)
}

func (a *anthropicClient) encode(p *anthropicRequest, req Request) ([]byte, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("llm: request: %w", err)
	}
	return mergeExtra(data, req.Extra, anthropicKeys)
}

// request is the request's body as a value.
func (a *anthropicClient) request(req Request, stream bool) (*anthropicRequest, error) {
	conv, err := messages.Anthropic(anthropicInput(req), messages.AnthropicOptions{})
	if err != nil {
		return nil, fmt.Errorf("llm: request: %w", err)
	}
	cfg := a.t.cfg
	if at := req.SystemCacheAt; at > 0 && at < len(req.System) && len(conv.System) == 1 && conv.System[0].Text == req.System {
		first := conv.System[0]
		first.Text = req.System[:at]
		conv.System = []messages.AnthropicBlock{first, {Type: "text", Text: req.System[at:]}}
	}
	p := &anthropicRequest{Model: cmpOr(req.Model, cfg.Model), MaxTokens: cmpOr(req.MaxTokens, cfg.MaxTokens),
		System: conv.System, Messages: conv.Messages, Stream: stream}
	// Temperature is not sent: loom's Messages API version has no such
	// field for the models it targets.
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("llm: request: tool %q: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	switch req.ToolChoice.Mode {
	case ToolChoiceAuto:
		p.ToolChoice = &anthropicToolChoice{Type: "auto"}
	case ToolChoiceNone:
		p.ToolChoice = &anthropicToolChoice{Type: "none"}
	case ToolChoiceRequired:
		p.ToolChoice = &anthropicToolChoice{Type: "any"}
	case ToolChoiceFunction:
		p.ToolChoice = &anthropicToolChoice{Type: "tool", Name: req.ToolChoice.Name}
	}
	if req.JSONSchema != nil && !cfg.NoJSONSchema {
		p.OutputConfig = &anthropicOutputConfig{}
		p.OutputConfig.Format.Type, p.OutputConfig.Format.Schema = "json_schema", req.JSONSchema.Schema
	}
	return p, nil
}

// inputSchema is a tool's parameters as the Messages API wants them: an
// object schema that names its type. A schema that names a type, the usual
// case, is sent as it came.
func inputSchema(params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 || string(params) == "null" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(params, &members); err != nil || members == nil {
		return nil, errors.New("parameters must be a JSON object")
	}
	if _, ok := members["type"]; ok {
		return params, nil
	}
	members["type"] = json.RawMessage(`"object"`)
	return json.Marshal(members)
}

func (a *anthropicClient) header() http.Header {
	h := http.Header{}
	h.Set("Anthropic-Version", anthropicVersion)
	if k := a.t.cfg.APIKey; k != "" {
		// Authorization too: gateways in front of Claude often want it.
		h.Set("X-Api-Key", k)
		h.Set("Authorization", "Bearer "+k)
	}
	return h
}

// path is /v1/messages under the base URL, which may be written with or
// without its /v1, as OpenAI-style configs have it.
func (a *anthropicClient) path() string {
	if strings.HasSuffix(a.t.cfg.baseURL(), "/v1") {
		return "/messages"
	}
	return "/v1/messages"
}

type anthropicUsage struct {
	InputTokens   *int `json:"input_tokens"`
	OutputTokens  *int `json:"output_tokens"`
	CacheRead     *int `json:"cache_read_input_tokens"`
	CacheCreation *int `json:"cache_creation_input_tokens"`
}

// merge takes the fields u reports over acc (a stream reports usage at
// its start and again in its message_delta).
func (u *anthropicUsage) merge(acc *anthropicUsage) {
	if u == nil {
		return
	}
	for _, f := range []struct{ src, dst **int }{{&u.InputTokens, &acc.InputTokens}, {&u.OutputTokens, &acc.OutputTokens},
		{&u.CacheRead, &acc.CacheRead}, {&u.CacheCreation, &acc.CacheCreation}} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
}

func (u anthropicUsage) usage() Usage {
	n := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	// The API counts cached prompt tokens apart from input_tokens; loom
	// reports the whole prompt.
	return Usage{
		InputTokens:      n(u.InputTokens) + n(u.CacheRead) + n(u.CacheCreation),
		OutputTokens:     n(u.OutputTokens),
		CachedTokens:     n(u.CacheRead),
		CacheWriteTokens: n(u.CacheCreation),
		CacheReported:    u.CacheRead != nil,
	}
}

type anthropicBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
}

type anthropicReply struct {
	Model      string           `json:"model"`
	StopReason string           `json:"stop_reason"`
	Content    []anthropicBlock `json:"content"`
	Usage      anthropicUsage   `json:"usage"`
	Error      *streamedError   `json:"error"`
}

func toolArgs(input json.RawMessage) string {
	if s := strings.TrimSpace(string(input)); s != "" && s != "null" {
		return s
	}
	return "{}"
}

func (a *anthropicClient) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := a.body(req, false)
	if err != nil {
		return Response{}, err
	}
	return retry(ctx, a.t, func(ctx context.Context) (Response, bool, error) {
		resp, err := a.t.post(ctx, a.path(), body, a.header())
		if err != nil {
			return Response{}, false, err
		}
		var r anthropicReply
		if err := a.t.readJSON(resp, &r); err != nil {
			return Response{}, false, err
		}
		if r.Error != nil {
			return Response{}, false, a.t.streamedAPIError(r.Error)
		}
		out := Response{Model: r.Model, FinishReason: r.StopReason, Usage: r.Usage.usage()}
		var text, thinking strings.Builder
		for _, b := range r.Content {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "thinking":
				thinking.WriteString(b.Thinking)
			case "tool_use":
				out.ToolCalls = append(out.ToolCalls, messages.NewToolCall(b.ID, b.Name, toolArgs(b.Input)))
			}
		}
		out.Content, out.Reasoning = text.String(), thinking.String()
		if replySize(out) > a.t.cfg.MaxReplyBytes {
			return Response{}, false, a.t.tooLarge()
		}
		return out, false, nil
	})
}

type anthropicEvent struct {
	Type         string          `json:"type"`
	Message      *anthropicReply `json:"message"`
	Index        int             `json:"index"`
	ContentBlock *anthropicBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
	Error *streamedError  `json:"error"`
}

// streamBlock accumulates one content block of a stream.
type streamBlock struct {
	typ, id, name string
	input         json.RawMessage
	args          strings.Builder
}

func (a *anthropicClient) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	body, err := a.body(req, true)
	if err != nil {
		return Response{}, err
	}
	return retry(ctx, a.t, func(ctx context.Context) (Response, bool, error) {
		resp, err := a.t.post(ctx, a.path(), body, a.header())
		if err != nil {
			return Response{}, false, err
		}
		defer resp.Body.Close()
		var (
			out      Response
			usage    anthropicUsage
			text     strings.Builder
			thinking strings.Builder
			blocks   = map[int]*streamBlock{}
			started  bool
			done     bool
			events   int
			budget   = replyCap{left: a.t.cfg.MaxReplyBytes}
		)
		deltas := &deltaBatch{on: onDelta}
		finish := func() Response {
			deltas.flush()
			out.Content, out.Reasoning, out.Usage = text.String(), thinking.String(), usage.usage()
			idx := make([]int, 0, len(blocks))
			for i, b := range blocks {
				if b.typ == "tool_use" {
					idx = append(idx, i)
				}
			}
			slices.Sort(idx)
			out.ToolCalls = nil
			for _, i := range idx {
				b := blocks[i]
				args := b.args.String()
				if args == "" {
					args = toolArgs(b.input)
				}
				out.ToolCalls = append(out.ToolCalls, messages.NewToolCall(b.id, b.name, args))
			}
			return out
		}
		sse := newSSE(resp.Body, int(a.t.cfg.MaxReplyBytes)+64<<10, a.t.rawLimit())
		for !done {
			deltas.before(sse)
			ev, err := sse.next()
			if err != nil {
				return finish(), started, a.t.streamError(err, events > 0, done)
			}
			events++
			var e anthropicEvent
			if err := json.Unmarshal(ev.data, &e); err != nil {
				return finish(), started, fmt.Errorf("llm: %s: stream event is not the JSON expected: %v", a.t.endpoint, err)
			}
			switch e.Type {
			case "error":
				if e.Error == nil {
					e.Error = &streamedError{Type: "error"}
				}
				return finish(), started, a.t.streamedAPIError(e.Error)
			case "message_start":
				if e.Message != nil {
					out.Model = e.Message.Model
					e.Message.Usage.merge(&usage)
				}
			case "content_block_start":
				if e.ContentBlock == nil {
					continue
				}
				if blocks[e.Index] == nil && len(blocks) >= maxToolCalls {
					return finish(), started, a.t.tooLarge()
				}
				cb := e.ContentBlock
				if !budget.take(len(cb.ID) + len(cb.Name) + len(cb.Input)) {
					return finish(), started, a.t.tooLarge()
				}
				blocks[e.Index] = &streamBlock{typ: cb.Type, id: cb.ID, name: cb.Name, input: cb.Input}
			case "content_block_delta":
				if e.Delta == nil {
					continue
				}
				d := e.Delta
				if !budget.take(len(d.Text) + len(d.Thinking) + len(d.PartialJSON)) {
					return finish(), started, a.t.tooLarge()
				}
				switch d.Type {
				case "text_delta":
					if d.Text != "" {
						started = true
						text.WriteString(d.Text)
						deltas.add(d.Text)
					}
				case "thinking_delta":
					thinking.WriteString(d.Thinking)
				case "input_json_delta":
					if b := blocks[e.Index]; b != nil {
						b.args.WriteString(d.PartialJSON)
					}
				}
			case "message_delta":
				if e.Delta != nil && e.Delta.StopReason != "" {
					out.FinishReason = e.Delta.StopReason
				}
				e.Usage.merge(&usage)
			case "message_stop":
				done = true
			}
		}
		return finish(), started, nil
	})
}
