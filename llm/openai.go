package llm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/loomctx/loom/messages"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// openaiClient speaks Chat Completions through openai-go. The SDK's own
// retries are off: retry does them, with an injectable backoff.
type openaiClient struct {
	cfg Config
	sdk openai.Client
}

func newOpenAI(c Config) *openaiClient {
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(c.BaseURL, "/")+"/"))
	}
	// A local server needs no key; send a placeholder rather than let the
	// SDK pick up an unrelated OPENAI_API_KEY.
	key := c.APIKey
	if key == "" {
		key = "none"
	}
	opts = append(opts, option.WithAPIKey(key))
	if c.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(c.HTTPClient))
	}
	return &openaiClient{cfg: c, sdk: openai.NewClient(opts...)}
}

func (o *openaiClient) params(req Request) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(cmpOr(req.Model, o.cfg.Model))}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		p.Messages = append(p.Messages, openaiMessage(m))
	}
	p.MaxTokens = openai.Int(int64(cmpOr(req.MaxTokens, o.cfg.MaxTokens)))
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  shared.FunctionParameters(t.Parameters),
		}))
	}
	switch req.ToolChoice.Mode {
	case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(string(req.ToolChoice.Mode))}
	case ToolChoiceFunction:
		p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: req.ToolChoice.Name})
	}
	if req.JSONSchema != nil && !o.cfg.NoJSONSchema {
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   req.JSONSchema.Name,
				Schema: req.JSONSchema.Schema,
				Strict: openai.Bool(req.JSONSchema.Strict),
			}},
		}
	}
	return p
}

func openaiMessage(m messages.Message) openai.ChatCompletionMessageParamUnion {
	text := m.Content.String()
	switch m.Role {
	case messages.RoleSystem:
		return openai.SystemMessage(text)
	case messages.RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if text != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(text)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
	case messages.RoleTool:
		return openai.ToolMessage(text, m.ToolCallID)
	default:
		return openai.UserMessage(text)
	}
}

func openaiUsage(u openai.CompletionUsage) Usage {
	return Usage{
		InputTokens:      int(u.PromptTokens),
		OutputTokens:     int(u.CompletionTokens),
		CachedTokens:     int(u.PromptTokensDetails.CachedTokens),
		CacheWriteTokens: int(u.PromptTokensDetails.CacheWriteTokens),
		CacheReported:    u.PromptTokensDetails.JSON.CachedTokens.Valid(),
	}
}

func (o *openaiClient) Complete(ctx context.Context, req Request) (Response, error) {
	p := o.params(req)
	return retry(ctx, o.cfg, func(ctx context.Context) (Response, bool, error) {
		res, err := o.sdk.Chat.Completions.New(ctx, p)
		if err != nil {
			return Response{}, false, o.wrap(err)
		}
		out := Response{Model: res.Model, Usage: openaiUsage(res.Usage)}
		if len(res.Choices) > 0 {
			ch := res.Choices[0]
			out.Content = ch.Message.Content
			out.FinishReason = ch.FinishReason
			for _, tc := range ch.Message.ToolCalls {
				out.ToolCalls = append(out.ToolCalls, messages.NewToolCall(tc.ID, tc.Function.Name, tc.Function.Arguments))
			}
		}
		return out, false, nil
	})
}

func (o *openaiClient) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	p := o.params(req)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	return retry(ctx, o.cfg, func(ctx context.Context) (Response, bool, error) {
		stream := o.sdk.Chat.Completions.NewStreaming(ctx, p)
		defer stream.Close()
		var (
			out     Response
			text    strings.Builder
			started bool
			done    bool
			calls   = map[int64]*messages.ToolCall{}
		)
		events := 0
		for stream.Next() {
			events++
			ch := stream.Current()
			if ch.Model != "" {
				out.Model = ch.Model
			}
			if ch.JSON.Usage.Valid() {
				out.Usage = openaiUsage(ch.Usage)
			}
			for _, c := range ch.Choices {
				if c.Delta.Content != "" {
					started = true
					text.WriteString(c.Delta.Content)
					if onDelta != nil {
						onDelta(c.Delta.Content)
					}
				}
				for _, d := range c.Delta.ToolCalls {
					tc := calls[d.Index]
					if tc == nil {
						tc = &messages.ToolCall{Type: "function"}
						calls[d.Index] = tc
					}
					tc.ID += d.ID
					tc.Function.Name += d.Function.Name
					tc.Function.Arguments += d.Function.Arguments
				}
				if c.FinishReason != "" {
					out.FinishReason = c.FinishReason
					done = true
				}
			}
		}
		out.Content = text.String()
		idx := make([]int64, 0, len(calls))
		for i := range calls {
			idx = append(idx, i)
		}
		sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
		for _, i := range idx {
			out.ToolCalls = append(out.ToolCalls, *calls[i])
		}
		if err := stream.Err(); err != nil {
			return out, started, streamErr(o.cfg, o.wrap(err), events > 0)
		}
		if !done {
			return out, started, fmt.Errorf("llm: %s: %w", o.cfg.endpoint(), ErrStreamCut)
		}
		return out, started, nil
	})
}

// wrap turns an SDK error into an APIError or an UnreachableError.
func (o *openaiClient) wrap(err error) error {
	var ae *openai.Error
	if errors.As(err, &ae) {
		return apiError(o.cfg.endpoint(), ae.StatusCode, ae.Message, ae.Response, ae.RawJSON(), err)
	}
	return transportError(o.cfg.endpoint(), err)
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}
