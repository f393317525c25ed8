package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxBreakpoints is the most cache_control markers Anthropic accepts in one
// request; a fifth is a 400 error.
const MaxBreakpoints = 4

// AnthropicOptions places cache breakpoints.
type AnthropicOptions struct {
	// CacheAfter puts a breakpoint after msgs[CacheAfter] as well as after
	// the system prompt; 0 (msgs[0] is the system prompt) means none.
	CacheAfter int
	// TTL is the cache lifetime: "" (the provider's 5-minute default) or
	// "1h".
	TTL string
}

// AnthropicRequest is the part of a Messages API request loom builds: the
// system blocks and the messages. The caller adds model, max_tokens and
// tools.
type AnthropicRequest struct {
	System   []AnthropicBlock   `json:"system,omitempty"`
	Messages []AnthropicMessage `json:"messages"`
}

// AnthropicMessage is one turn of the Messages API, in loom's own wire
// form (no SDK type).
type AnthropicMessage struct {
	Role    Role             `json:"role"` // user or assistant
	Content []AnthropicBlock `json:"content"`
}

// AnthropicThinkingKey is the Message.Extra key that holds an assistant
// turn's thinking as the Messages API gave it: a JSON list of its
// thinking blocks (with their signatures) and redacted_thinking blocks
// (with their data), in order. The API takes thinking back only signed and
// unchanged, so the blocks are kept as they came and put back first in
// the turn; Reasoning holds their text for reading, and other wire formats
// leave them out.
const AnthropicThinkingKey = "anthropic_thinking"

// AnthropicBlock is a content block: text, image, tool_use, tool_result
// (whose Content holds text and image blocks), or an assistant's thinking
// or redacted_thinking.
type AnthropicBlock struct {
	Type         string                 `json:"type"`
	Thinking     *string                `json:"thinking,omitempty"`
	Signature    string                 `json:"signature,omitempty"`
	Data         string                 `json:"data,omitempty"`
	Text         string                 `json:"text,omitempty"`
	Source       *AnthropicSource       `json:"source,omitempty"`
	ID           string                 `json:"id,omitempty"`
	Name         string                 `json:"name,omitempty"`
	Input        json.RawMessage        `json:"input,omitempty"`
	ToolUseID    string                 `json:"tool_use_id,omitempty"`
	Content      []AnthropicBlock       `json:"content,omitempty"`
	IsError      bool                   `json:"is_error,omitempty"`
	CacheControl *AnthropicCacheControl `json:"cache_control,omitempty"`
}

// AnthropicSource is an image block's image: base64 data or a URL.
type AnthropicSource struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// AnthropicCacheControl marks a cache breakpoint.
type AnthropicCacheControl struct {
	Type string `json:"type"` // ephemeral
	TTL  string `json:"ttl,omitempty"`
}

// Anthropic converts the built turn, with a breakpoint after the system
// prompt and, when cacheHistory is set, one after the last stable history
// message.
func (r *Result) Anthropic(cacheHistory bool, ttl string) (*AnthropicRequest, error) {
	opts := AnthropicOptions{TTL: ttl}
	if cacheHistory {
		opts.CacheAfter = r.Report.Prefix.Messages
	}
	return Anthropic(r.Messages, opts)
}

// Anthropic converts messages to the Messages API form, built from the
// loom's own wire types: the system message becomes the system blocks
// with a cache breakpoint; tool calls become tool_use blocks and tool
// results tool_result blocks in a user turn; consecutive same-role messages
// share one turn; images become base64 source blocks. Reasoning text is
// left out, since Anthropic replays only signed thinking blocks.
func Anthropic(msgs []Message, opts AnthropicOptions) (*AnthropicRequest, error) {
	cc := &AnthropicCacheControl{Type: "ephemeral", TTL: opts.TTL}
	req := &AnthropicRequest{Messages: make([]AnthropicMessage, 0, len(msgs))}
	var lastRole Role
	for i, m := range msgs {
		if m.Role == RoleSystem {
			if i != 0 {
				return nil, fmt.Errorf("message %d: a system message must come first", i)
			}
			if text := m.Content.String(); text != "" {
				req.System = []AnthropicBlock{{Type: "text", Text: text, CacheControl: cc}}
			}
			continue
		}
		blocks, err := anthropicBlocks(m)
		if err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		if len(blocks) == 0 {
			return nil, fmt.Errorf("message %d (%s): empty message; clean the history first", i, m.Role)
		}
		role := m.Role
		if role == RoleTool {
			role = RoleUser
		}
		if n := len(req.Messages); n > 0 && role == lastRole {
			req.Messages[n-1].Content = append(req.Messages[n-1].Content, blocks...)
		} else {
			req.Messages = append(req.Messages, AnthropicMessage{Role: role, Content: blocks})
		}
		lastRole = role
		if opts.CacheAfter > 0 && i == opts.CacheAfter {
			content := req.Messages[len(req.Messages)-1].Content
			content[len(content)-1].CacheControl = cc
		}
	}
	if n := countBreakpoints(req); n > MaxBreakpoints {
		return nil, fmt.Errorf("%d cache breakpoints, over Anthropic's limit of %d", n, MaxBreakpoints)
	}
	return req, nil
}

func anthropicBlocks(m Message) ([]AnthropicBlock, error) {
	var blocks []AnthropicBlock
	switch m.Role {
	case RoleUser, RoleAssistant:
		if m.Role == RoleAssistant {
			blocks = AnthropicThinking(m)
		}
		for _, p := range contentParts(m.Content) {
			switch {
			case p.Type == PartImage:
				if m.Role == RoleAssistant {
					return nil, fmt.Errorf("assistant content cannot hold an image")
				}
				blocks = append(blocks, anthropicImage(p.Image))
			case p.Text != "": // Anthropic rejects empty text blocks
				blocks = append(blocks, AnthropicBlock{Type: "text", Text: p.Text})
			}
		}
		for _, tc := range m.ToolCalls {
			args := bytes.TrimSpace([]byte(tc.Function.Arguments))
			if len(args) == 0 {
				args = []byte("{}")
			}
			if !json.Valid(args) || args[0] != '{' {
				return nil, fmt.Errorf("tool call %q: arguments are not a JSON object", tc.ID)
			}
			blocks = append(blocks, AnthropicBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage(args)})
		}
	case RoleTool:
		res := AnthropicBlock{Type: "tool_result", ToolUseID: m.ToolCallID()}
		for _, p := range contentParts(m.Content) {
			switch {
			case p.Type == PartImage:
				res.Content = append(res.Content, anthropicImage(p.Image))
			case p.Text != "":
				res.Content = append(res.Content, AnthropicBlock{Type: "text", Text: p.Text})
			}
		}
		blocks = append(blocks, res)
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	return blocks, nil
}

// AnthropicThinking is an assistant message's thinking blocks kept under
// AnthropicThinkingKey, in order: each thinking block with its signature,
// each redacted_thinking block with its data. Blocks that could not be
// sent back (unsigned, empty, of another type) and a value that is not
// such a list are left out.
func AnthropicThinking(m Message) []AnthropicBlock {
	raw, ok := m.Extra()[AnthropicThinkingKey]
	if !ok {
		return nil
	}
	var kept []AnthropicBlock
	if json.Unmarshal(raw, &kept) != nil {
		return nil
	}
	out := kept[:0]
	for _, b := range kept {
		switch {
		case b.Type == "thinking" && b.Thinking != nil && b.Signature != "":
			out = append(out, AnthropicBlock{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature})
		case b.Type == "redacted_thinking" && b.Data != "":
			out = append(out, AnthropicBlock{Type: b.Type, Data: b.Data})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func contentParts(c Content) []Part {
	if c.IsList() {
		return c.Parts
	}
	return []Part{{Type: PartText, Text: c.Text}}
}

func anthropicImage(im *Image) AnthropicBlock {
	if im.Data == "" {
		return AnthropicBlock{Type: "image", Source: &AnthropicSource{Type: "url", URL: im.URL}}
	}
	return AnthropicBlock{Type: "image", Source: &AnthropicSource{Type: "base64", MediaType: im.MIME, Data: im.Data}}
}

func countBreakpoints(req *AnthropicRequest) int {
	n := 0
	for _, s := range req.System {
		if s.CacheControl != nil {
			n++
		}
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.CacheControl != nil {
				n++
			}
		}
	}
	return n
}
