package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/loomctx/loom/messages"
)

// anthropicClient speaks the Anthropic Messages API through its SDK, with
// the SDK's retries off (retry does them).
type anthropicClient struct {
	cfg Config
	sdk anthropic.Client
}

func newAnthropic(c Config) *anthropicClient {
	// x-api-key too: gateways in front of Claude often still expect it.
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(c.APIKey), option.WithHeader("x-api-key", c.APIKey)}
	if c.BaseURL != "" {
		// The SDK adds /v1/messages itself; accept a base URL written with
		// /v1 as OpenAI-style configs have it.
		base := strings.TrimSuffix(strings.TrimRight(c.BaseURL, "/"), "/v1")
		opts = append(opts, option.WithBaseURL(base+"/"))
	}
	if c.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(c.HTTPClient))
	}
	return &anthropicClient{cfg: c, sdk: anthropic.NewClient(opts...)}
}

func (a *anthropicClient) params(req Request) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(cmpOr(req.Model, a.cfg.Model)),
		MaxTokens: int64(cmpOr(req.MaxTokens, a.cfg.MaxTokens)),
	}
	if req.System != "" {
		// The system prompt is the stable prefix: mark it for the cache.
		p.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	p.Messages = anthropicMessages(req.Messages)
	// Temperature is not sent: the v2 Messages API has no such field.
	for _, t := range req.Tools {
		schema := anthropic.ToolInputSchemaParam{Properties: t.Parameters["properties"]}
		if r, ok := t.Parameters["required"].([]string); ok {
			schema.Required = r
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        t.Name,
			Description: anthropic.String(t.Description),
			InputSchema: schema,
		}})
	}
	switch req.ToolChoice.Mode {
	case ToolChoiceAuto:
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
	case ToolChoiceNone:
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	case ToolChoiceRequired:
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	case ToolChoiceFunction:
		p.ToolChoice = anthropic.ToolChoiceParamOfTool(req.ToolChoice.Name)
	}
	if req.JSONSchema != nil && !a.cfg.NoJSONSchema {
		p.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: req.JSONSchema.Schema}}
	}
	return p
}

// anthropicMessages converts OpenAI-shaped messages: tool results become
// tool_result blocks in a user turn, and consecutive turns of one role are
// merged because the API wants the roles to alternate.
func anthropicMessages(ms []messages.Message) []anthropic.MessageParam {
	type turn struct {
		assistant bool
		blocks    []anthropic.ContentBlockParamUnion
	}
	var turns []turn
	add := func(assistant bool, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{assistant: assistant, blocks: blocks})
	}
	for _, m := range ms {
		text := m.Content.String()
		switch m.Role {
		case messages.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(text))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, rawArgs(tc.Function.Arguments), tc.Function.Name))
			}
			add(true, blocks...)
		case messages.RoleTool:
			add(false, anthropic.NewToolResultBlock(m.ToolCallID, text, false))
		default: // user; a stray system message is sent as user text
			if text != "" {
				add(false, anthropic.NewTextBlock(text))
			}
		}
	}
	out := make([]anthropic.MessageParam, 0, len(turns))
	for _, t := range turns {
		if t.assistant {
			out = append(out, anthropic.NewAssistantMessage(t.blocks...))
		} else {
			out = append(out, anthropic.NewUserMessage(t.blocks...))
		}
	}
	return out
}

func anthropicUsage(u anthropic.Usage) Usage {
	return Usage{
		// The API counts cached prompt tokens apart from input_tokens;
		// loom reports the whole prompt.
		InputTokens:      int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		OutputTokens:     int(u.OutputTokens),
		CachedTokens:     int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
		CacheReported:    u.JSON.CacheReadInputTokens.Valid(),
	}
}

func anthropicResponse(m *anthropic.Message) Response {
	out := Response{Model: string(m.Model), FinishReason: string(m.StopReason), Usage: anthropicUsage(m.Usage)}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, messages.NewToolCall(b.ID, b.Name, args))
		}
	}
	out.Content = text.String()
	return out
}

func (a *anthropicClient) Complete(ctx context.Context, req Request) (Response, error) {
	p := a.params(req)
	return retry(ctx, a.cfg, func(ctx context.Context) (Response, bool, error) {
		m, err := a.sdk.Messages.New(ctx, p)
		if err != nil {
			return Response{}, false, a.wrap(err)
		}
		return anthropicResponse(m), false, nil
	})
}

func (a *anthropicClient) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	p := a.params(req)
	return retry(ctx, a.cfg, func(ctx context.Context) (Response, bool, error) {
		stream := a.sdk.Messages.NewStreaming(ctx, p)
		defer stream.Close()
		var (
			msg     anthropic.Message
			started bool
			done    bool
		)
		events := 0
		for stream.Next() {
			events++
			ev := stream.Current()
			if err := msg.Accumulate(ev); err != nil {
				return anthropicResponse(&msg), started, fmt.Errorf("llm: %s: stream: %w", a.cfg.endpoint(), err)
			}
			switch ev.Type {
			case "content_block_delta":
				if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
					started = true
					if onDelta != nil {
						onDelta(ev.Delta.Text)
					}
				}
			case "message_stop":
				done = true
			}
		}
		out := anthropicResponse(&msg)
		if err := stream.Err(); err != nil {
			return out, started, streamErr(a.cfg, a.wrap(err), events > 0)
		}
		if !done {
			return out, started, fmt.Errorf("llm: %s: %w", a.cfg.endpoint(), ErrStreamCut)
		}
		return out, started, nil
	})
}

func (a *anthropicClient) wrap(err error) error {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return apiError(a.cfg.endpoint(), ae.StatusCode, ae.Message, ae.Response, ae.RawJSON(), err)
	}
	return transportError(a.cfg.endpoint(), err)
}
