// Package llm talks to a language model: an OpenAI-compatible Chat
// Completions endpoint (OpenAI, Ollama, vLLM, llama.cpp, gateways) or the
// Anthropic Messages API, behind one small Client interface. It is a thin
// client over net/http, with no SDK: one retry policy (retry.go), a bound
// on the reply's size checked as it streams, errors that name the endpoint
// with credentials redacted, a stream that reports when it was cut, and
// the rule for where a key from the environment may be sent (Resolve).
package llm

import (
	"context"
	"encoding/json"

	"github.com/loomctx/loom/messages"
)

// Tool describes a function the model may call. Parameters is a JSON schema
// of type object, kept as the JSON text it came as (nil: no parameters), so
// a client's tools reach the upstream without being decoded into maps that
// take many times their size.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolChoiceMode says whether the model may, must or must not call a tool.
type ToolChoiceMode string

// Tool choice modes. ToolChoiceDefault sends nothing and leaves the choice to
// the endpoint.
const (
	ToolChoiceDefault  ToolChoiceMode = ""
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	ToolChoiceFunction ToolChoiceMode = "function" // force the tool named in ToolChoice.Name
)

// ToolChoice is the tool_choice of a request.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string // the forced function when Mode is ToolChoiceFunction
}

// ForceTool returns a ToolChoice that forces a call to the named function.
func ForceTool(name string) ToolChoice { return ToolChoice{Mode: ToolChoiceFunction, Name: name} }

// JSONSchema asks for structured output matching Schema, where the endpoint
// supports it.
type JSONSchema struct {
	Name   string
	Schema map[string]any
	Strict bool
}

// Request is one model call. System is sent as the system prompt; Messages
// should not contain a system message (one that does is sent as it is, after
// System).
type Request struct {
	Model       string // overrides Config.Model when set
	System      string
	Messages    []messages.Message
	Tools       []Tool
	ToolChoice  ToolChoice
	JSONSchema  *JSONSchema
	MaxTokens   int      // 0: the Config's default
	Temperature *float64 // nil: the endpoint's default
	// Extra keys are added to the request body as they are, after loom's
	// own, which they never replace: a gateway passes a client's fields
	// through with them.
	Extra map[string]json.RawMessage
	// KeepMessageExtra sends each message's Extra keys too (OpenAI format
	// only); off, messages hold only what the wire format defines.
	KeepMessageExtra bool
	// SystemCacheAt, when inside System, splits the system prompt for
	// the Messages API into two blocks at that byte offset, the cache
	// breakpoint after the first: a gateway's own prompt stays cached when
	// the client's system text after it changes. 0 sends one block with
	// the breakpoint after it.
	SystemCacheAt int
}

// Usage is what a call cost, as the API reported it.
type Usage struct {
	InputTokens      int `json:"input_tokens"`  // all prompt tokens, cached ones included
	OutputTokens     int `json:"output_tokens"` //
	CachedTokens     int `json:"cached_tokens"` // prompt tokens served from the provider's cache
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// CacheReported is true when the API said anything about caching, so a
	// status line can tell "0 cached" from "not reported".
	CacheReported bool `json:"-"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		CacheReported:    u.CacheReported || v.CacheReported,
	}
}

// Response is the model's reply.
type Response struct {
	Content      string
	Reasoning    string // reasoning text some endpoints return apart (reasoning_content)
	ToolCalls    []messages.ToolCall
	FinishReason string
	Model        string
	Usage        Usage
}

// Client is the one interface the rest of loom uses to call a model.
// Implementations are safe for concurrent use.
type Client interface {
	// Complete sends req and waits for the whole reply.
	Complete(ctx context.Context, req Request) (Response, error)
	// Stream sends req and calls onDelta with the reply text as it
	// arrives: once for the pieces that arrived together, before waiting
	// for more. If the stream is cut, it returns what arrived so far with
	// an error wrapping ErrStreamCut.
	Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error)
}

// Message returns the reply as an assistant message, for history.
func (r Response) Message() messages.Message {
	return messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(r.Content), ToolCalls: r.ToolCalls}
}
