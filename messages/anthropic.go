package messages

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
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
	TTL anthropic.CacheControlEphemeralTTL
}

// AnthropicRequest is the part of a Messages API request loom builds: the
// system blocks and the messages. The caller adds model, max_tokens and
// tools.
type AnthropicRequest struct {
	System   []anthropic.TextBlockParam `json:"system,omitempty"`
	Messages []anthropic.MessageParam   `json:"messages"`
}

// Anthropic converts the built turn, with a breakpoint after the system
// prompt and, when cacheHistory is set, one after the last stable history
// message.
func (r *Result) Anthropic(cacheHistory bool, ttl anthropic.CacheControlEphemeralTTL) (*AnthropicRequest, error) {
	opts := AnthropicOptions{TTL: ttl}
	if cacheHistory {
		opts.CacheAfter = r.Report.Prefix.Messages
	}
	return Anthropic(r.Messages, opts)
}

// Anthropic converts messages to the Messages API form, built from the
// official SDK's param types: the system message becomes the system blocks
// with a cache breakpoint; tool calls become tool_use blocks and tool
// results tool_result blocks in a user turn; consecutive same-role messages
// share one turn; images become base64 source blocks. Reasoning text is
// left out, since Anthropic replays only signed thinking blocks.
func Anthropic(msgs []Message, opts AnthropicOptions) (*AnthropicRequest, error) {
	cc := anthropic.NewCacheControlEphemeralParam()
	cc.TTL = opts.TTL
	req := &AnthropicRequest{Messages: make([]anthropic.MessageParam, 0, len(msgs))}
	var lastRole Role
	for i, m := range msgs {
		if m.Role == RoleSystem {
			if i != 0 {
				return nil, fmt.Errorf("message %d: a system message must come first", i)
			}
			if text := m.Content.String(); text != "" {
				req.System = []anthropic.TextBlockParam{{Text: text, CacheControl: cc}}
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
			if last := &req.Messages[n-1]; last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
			} else {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
			}
		} else if role == RoleUser {
			req.Messages = append(req.Messages, anthropic.NewUserMessage(blocks...))
		} else {
			req.Messages = append(req.Messages, anthropic.NewAssistantMessage(blocks...))
		}
		lastRole = role
		if i == opts.CacheAfter {
			content := blocksOf(&req.Messages[len(req.Messages)-1])
			setCache(&content[len(content)-1], cc)
		}
	}
	if n := countBreakpoints(req); n > MaxBreakpoints {
		return nil, fmt.Errorf("%d cache breakpoints, over Anthropic's limit of %d", n, MaxBreakpoints)
	}
	return req, nil
}

func anthropicBlocks(m Message) ([]anthropic.ContentBlockParamUnion, error) {
	var blocks []anthropic.ContentBlockParamUnion
	switch m.Role {
	case RoleUser, RoleAssistant:
		for _, p := range contentParts(m.Content) {
			switch {
			case p.Type == PartImage:
				if m.Role == RoleAssistant {
					return nil, fmt.Errorf("assistant content cannot hold an image")
				}
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfImage: anthropicImage(p.Image)})
			case p.Text != "": // Anthropic rejects empty text blocks
				blocks = append(blocks, anthropic.NewTextBlock(p.Text))
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
			blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, json.RawMessage(args), tc.Function.Name))
		}
	case RoleTool:
		res := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
		for _, p := range contentParts(m.Content) {
			switch {
			case p.Type == PartImage:
				res.Content = append(res.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: anthropicImage(p.Image)})
			case p.Text != "":
				res.Content = append(res.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: p.Text}})
			}
		}
		blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &res})
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	return blocks, nil
}

func contentParts(c Content) []Part {
	if c.IsList() {
		return c.Parts
	}
	return []Part{{Type: PartText, Text: c.Text}}
}

func anthropicImage(im *Image) *anthropic.ImageBlockParam {
	if im.Data == "" {
		return &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{OfURL: &anthropic.URLImageSourceParam{URL: im.URL}}}
	}
	return &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{
		OfBase64: &anthropic.Base64ImageSourceParam{Data: im.Data, MediaType: anthropic.Base64ImageSourceMediaType(im.MIME)},
	}}
}

func setCache(b *anthropic.ContentBlockParamUnion, cc anthropic.CacheControlEphemeralParam) {
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfImage != nil:
		b.OfImage.CacheControl = cc
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	}
}

// blocksOf returns the content blocks of a user or assistant turn.
func blocksOf(m *anthropic.MessageParam) []anthropic.ContentBlockParamUnion {
	switch {
	case m.OfUser != nil:
		return m.OfUser.Content
	case m.OfAssistant != nil:
		return m.OfAssistant.Content
	}
	return nil
}

func countBreakpoints(req *AnthropicRequest) int {
	n := 0
	for _, s := range req.System {
		if s.CacheControl.Type != "" {
			n++
		}
	}
	for i := range req.Messages {
		for _, b := range blocksOf(&req.Messages[i]) {
			if cc := b.GetCacheControl(); cc != nil && cc.Type != "" {
				n++
			}
		}
	}
	return n
}
