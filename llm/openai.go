package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/loomctx/loom/messages"
)

// openaiClient speaks Chat Completions over net/http: JSON for Complete,
// server-sent events for Stream.
type openaiClient struct {
	t   *transport
	sys systemCache
}

type openaiRequest struct {
	Model          string                   `json:"model"`
	Messages       []messages.OpenAIMessage `json:"messages"`
	MaxTokens      int                      `json:"max_tokens,omitempty"`
	Temperature    *float64                 `json:"temperature,omitempty"`
	Tools          []openaiTool             `json:"tools,omitempty"`
	ToolChoice     any                      `json:"tool_choice,omitempty"`
	ResponseFormat *openaiResponseFormat    `json:"response_format,omitempty"`
	Stream         bool                     `json:"stream,omitempty"`
	StreamOptions  *openaiStreamOptions     `json:"stream_options,omitempty"`
}

// openaiKeys are the request keys loom writes; Request.Extra never
// replaces one.
var openaiKeys = map[string]bool{"model": true, "messages": true, "max_tokens": true, "temperature": true, "tools": true,
	"tool_choice": true, "response_format": true, "stream": true, "stream_options": true}

type openaiTool struct {
	Type     string         `json:"type"`
	Function openaiFunction `json:"function"`
}

type openaiFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type openaiResponseFormat struct {
	Type       string           `json:"type"`
	JSONSchema openaiJSONSchema `json:"json_schema"`
}

type openaiJSONSchema struct {
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema"`
	Strict bool           `json:"strict"`
}

type openaiStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type openaiNamedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// body is the request body: the system message's encoding kept (see
// systemCache), put first in the messages of the rest, encoded now.
func (o *openaiClient) body(req Request, stream bool) ([]byte, error) {
	if req.System == "" {
		return o.bodyPlain(req, stream)
	}
	sys, err := o.sys.get(req.System, 0, func() ([]byte, error) {
		wire, err := messages.OpenAIWith([]messages.Message{{Role: messages.RoleSystem, Content: messages.TextContent(req.System)}}, messages.OpenAIOptions{})
		if err != nil {
			return nil, fmt.Errorf("llm: request: %w", err)
		}
		return json.Marshal(wire[0])
	})
	if err != nil {
		return nil, err
	}
	rest := req
	rest.System = ""
	data, err := o.bodyPlain(rest, stream)
	if err != nil {
		return nil, err
	}
	i := keyAfter(data, "messages")
	switch {
	case i < 0:
		return nil, fmt.Errorf("llm: request: no messages in the body")
	case bytes.HasPrefix(data[i:], []byte("null")): // no other message
		return slices.Concat(data[:i], []byte{'['}, sys, []byte{']'}, data[i+len("null"):]), nil
	case bytes.HasPrefix(data[i:], []byte("[]")):
		return insertAt(data, i+1, sys), nil
	}
	return insertAt(data, i+1, sys, []byte{','}), nil
}

// bodyPlain is the request body encoded in one pass, the system prompt
// with the rest.
func (o *openaiClient) bodyPlain(req Request, stream bool) ([]byte, error) {
	msgs := req.Messages
	if req.System != "" {
		msgs = append([]messages.Message{{Role: messages.RoleSystem, Content: messages.TextContent(req.System)}}, msgs...)
	}
	wire, err := messages.OpenAIWith(msgs, messages.OpenAIOptions{KeepExtra: req.KeepMessageExtra})
	if err != nil {
		return nil, fmt.Errorf("llm: request: %w", err)
	}
	cfg := o.t.cfg
	p := openaiRequest{Model: cmpOr(req.Model, cfg.Model), Messages: wire,
		MaxTokens: cmpOr(req.MaxTokens, cfg.MaxTokens), Temperature: req.Temperature}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openaiTool{Type: "function", Function: openaiFunction(t)})
	}
	switch req.ToolChoice.Mode {
	case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		p.ToolChoice = string(req.ToolChoice.Mode)
	case ToolChoiceFunction:
		c := openaiNamedChoice{Type: "function"}
		c.Function.Name = req.ToolChoice.Name
		p.ToolChoice = c
	}
	if req.JSONSchema != nil && !cfg.NoJSONSchema {
		p.ResponseFormat = &openaiResponseFormat{Type: "json_schema", JSONSchema: openaiJSONSchema{
			Name: req.JSONSchema.Name, Schema: req.JSONSchema.Schema, Strict: req.JSONSchema.Strict}}
	}
	if stream {
		p.Stream = true
		p.StreamOptions = &openaiStreamOptions{IncludeUsage: true}
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("llm: request: %w", err)
	}
	return mergeExtra(data, req.Extra, openaiKeys)
}

func (o *openaiClient) header() http.Header {
	h := http.Header{}
	if k := o.t.cfg.APIKey; k != "" {
		h.Set("Authorization", "Bearer "+k)
	}
	return h
}

type openaiUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens     *int `json:"cached_tokens"`
		CacheWriteTokens int  `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *openaiUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheWriteTokens = d.CacheWriteTokens
		if d.CachedTokens != nil {
			out.CachedTokens, out.CacheReported = *d.CachedTokens, true
		}
	}
	return out
}

// openaiCall is a tool call as a reply holds it. Arguments are a JSON
// string by the spec; some servers send an object, kept as its text.
type openaiCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

func (c openaiCall) arguments() string {
	var s string
	if json.Unmarshal(c.Function.Arguments, &s) == nil {
		return s
	}
	if string(c.Function.Arguments) == "null" {
		return ""
	}
	return string(c.Function.Arguments)
}

type openaiReply struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   *string      `json:"content"`
			Reasoning string       `json:"reasoning_content"`
			ToolCalls []openaiCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiUsage   `json:"usage"`
	Error *streamedError `json:"error"`
}

// streamedError is an error an endpoint sends inside a 200 reply or a
// stream.
type streamedError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

func (o *openaiClient) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := o.body(req, false)
	if err != nil {
		return Response{}, err
	}
	return retry(ctx, o.t, func(ctx context.Context) (Response, bool, error) {
		resp, err := o.t.post(ctx, "/chat/completions", body, o.header())
		if err != nil {
			return Response{}, false, err
		}
		var r openaiReply
		if err := o.t.readJSON(resp, &r); err != nil {
			return Response{}, false, err
		}
		if r.Error != nil {
			return Response{}, false, o.t.streamedAPIError(r.Error)
		}
		out := Response{Model: r.Model, Usage: r.Usage.usage()}
		if len(r.Choices) > 0 {
			ch := r.Choices[0]
			if ch.Message.Content != nil {
				out.Content = *ch.Message.Content
			}
			out.Reasoning = ch.Message.Reasoning
			out.FinishReason = ch.FinishReason
			for _, tc := range ch.Message.ToolCalls {
				out.ToolCalls = append(out.ToolCalls, messages.NewToolCall(tc.ID, tc.Function.Name, tc.arguments()))
			}
		}
		if replySize(out) > o.t.cfg.MaxReplyBytes {
			return Response{}, false, o.t.tooLarge()
		}
		return out, false, nil
	})
}

type openaiChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content   string       `json:"content"`
			Reasoning string       `json:"reasoning_content"`
			ToolCalls []openaiCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiUsage   `json:"usage"`
	Error *streamedError `json:"error"`
}

func (o *openaiClient) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	body, err := o.body(req, true)
	if err != nil {
		return Response{}, err
	}
	return retry(ctx, o.t, func(ctx context.Context) (Response, bool, error) {
		resp, err := o.t.post(ctx, "/chat/completions", body, o.header())
		if err != nil {
			return Response{}, false, err
		}
		defer resp.Body.Close()
		var (
			out       Response
			text      strings.Builder
			reasoning strings.Builder
			started   bool
			done      bool
			events    int
			calls     = map[int]*messages.ToolCall{}
			budget    = replyCap{left: o.t.cfg.MaxReplyBytes}
		)
		deltas := &deltaBatch{on: onDelta}
		finish := func() Response {
			deltas.flush()
			out.Content, out.Reasoning = text.String(), reasoning.String()
			idx := make([]int, 0, len(calls))
			for i := range calls {
				idx = append(idx, i)
			}
			slices.Sort(idx)
			out.ToolCalls = out.ToolCalls[:0]
			for _, i := range idx {
				out.ToolCalls = append(out.ToolCalls, *calls[i])
			}
			return out
		}
		sse := newSSE(resp.Body, int(o.t.cfg.MaxReplyBytes)+64<<10, o.t.rawLimit())
		for {
			deltas.before(sse)
			ev, err := sse.next()
			if err != nil {
				return finish(), started, o.t.streamError(err, events > 0, done)
			}
			events++
			if string(ev.data) == "[DONE]" {
				break
			}
			var ch openaiChunk
			if err := json.Unmarshal(ev.data, &ch); err != nil {
				return finish(), started, fmt.Errorf("llm: %s: stream event is not the JSON expected: %v", o.t.endpoint, err)
			}
			if ch.Error != nil {
				return finish(), started, o.t.streamedAPIError(ch.Error)
			}
			if ch.Model != "" {
				out.Model = ch.Model
			}
			if ch.Usage != nil {
				out.Usage = ch.Usage.usage()
			}
			for _, c := range ch.Choices {
				d := c.Delta
				if !budget.take(len(d.Content) + len(d.Reasoning)) {
					return finish(), started, o.t.tooLarge()
				}
				reasoning.WriteString(d.Reasoning)
				if d.Content != "" {
					started = true
					text.WriteString(d.Content)
					deltas.add(d.Content)
				}
				for _, dc := range d.ToolCalls {
					tc := calls[dc.Index]
					if tc == nil {
						if len(calls) >= maxToolCalls {
							return finish(), started, o.t.tooLarge()
						}
						tc = &messages.ToolCall{Type: "function"}
						calls[dc.Index] = tc
					}
					args := dc.arguments()
					if !budget.take(len(dc.ID) + len(dc.Function.Name) + len(args)) {
						return finish(), started, o.t.tooLarge()
					}
					tc.ID += dc.ID
					tc.Function.Name += dc.Function.Name
					tc.Function.Arguments += args
				}
				if c.FinishReason != nil && *c.FinishReason != "" {
					out.FinishReason = *c.FinishReason
					done = true
				}
			}
		}
		if !done {
			return finish(), started, fmt.Errorf("llm: %s: %w", o.t.endpoint, ErrStreamCut)
		}
		return finish(), started, nil
	})
}

// maxToolCalls bounds the tool calls of one reply.
const maxToolCalls = 1024

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}
