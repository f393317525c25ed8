package protocol

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
)

// Anthropic's Messages API, inbound: POST /v1/messages (and
// /v1/messages/count_tokens, the same body without max_tokens).
//
// What is read: model, max_tokens, system (a string or text blocks),
// messages (user, assistant, and the system turns Claude Code sends
// mid-conversation, whose text joins the client's system text) with text,
// image, tool_use, tool_result, thinking and redacted_thinking blocks in
// the order they came, tools (custom tools: name, description,
// input_schema), tool_choice (auto, any, tool, none), stop_sequences,
// temperature, top_p, top_k, stream, metadata.user_id and
// output_config.format json_schema. thinking, context_management,
// output_config.effort and cache_control markers are accepted and not sent
// on: loom places its own breakpoint after its prompt.

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Source    *anthropicSrc   `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Thinking  *string         `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

type anthropicSrc struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// DecodeMessages reads a Messages API request. countOnly is for
// count_tokens, where max_tokens is not sent.
func DecodeMessages(body []byte, countOnly bool) (*Turn, error) {
	f, err := object(body)
	if err != nil {
		return nil, err
	}
	t := &Turn{Call: llm.Request{Extra: map[string]json.RawMessage{}}}
	if t.Model, err = str(f, "model"); err != nil {
		return nil, err
	}
	if t.Stream, err = boolean(f, "stream"); err != nil {
		return nil, err
	}
	if t.Call.MaxTokens, err = positive(f, "max_tokens"); err != nil {
		return nil, err
	}
	if t.Call.MaxTokens == 0 && !countOnly {
		return nil, ferr("max_tokens", "is required")
	}
	if t.Call.Temperature, err = number(f, "temperature", nil); err != nil {
		return nil, err
	}
	if _, err = number(f, "top_p", t.Call.Extra); err != nil {
		return nil, err
	}
	if has(f, "top_k") {
		if _, err := positive(f, "top_k"); err != nil {
			return nil, err
		}
		t.Call.Extra["top_k"] = f["top_k"]
	}
	if has(f, "stop_sequences") {
		if err := json.Unmarshal(f["stop_sequences"], &t.Stop); err != nil {
			return nil, ferr("stop_sequences", "must be a list of strings")
		}
	}
	if has(f, "metadata") {
		var meta struct {
			UserID string `json:"user_id"`
		}
		if err := json.Unmarshal(f["metadata"], &meta); err != nil {
			return nil, ferr("metadata", "must be an object")
		}
		// Claude Code sends a JSON object as user_id, naming its session.
		var cc struct {
			SessionID string `json:"session_id"`
		}
		if strings.HasPrefix(meta.UserID, "{") && json.Unmarshal([]byte(meta.UserID), &cc) == nil {
			t.Session = cc.SessionID
		} else {
			t.User = meta.UserID
		}
	}
	if has(f, "system") {
		text, err := t.systemBlocks(f["system"])
		if err != nil {
			return nil, err
		}
		if text != "" {
			t.System = append(t.System, text)
		}
	}
	if err := t.anthropicMessages(f["messages"]); err != nil {
		return nil, err
	}
	if t.Call.Tools, err = anthropicTools(f); err != nil {
		return nil, err
	}
	if t.Call.ToolChoice, t.Parallel, err = anthropicToolChoice(f); err != nil {
		return nil, err
	}
	if has(f, "output_config") {
		var oc struct {
			Format *struct {
				Type   string         `json:"type"`
				Schema map[string]any `json:"schema"`
			} `json:"format"`
		}
		if err := json.Unmarshal(f["output_config"], &oc); err != nil {
			return nil, ferr("output_config", "must be an object")
		}
		if oc.Format != nil {
			if oc.Format.Type != "json_schema" || oc.Format.Schema == nil {
				return nil, ferr("output_config.format", "must be {\"type\":\"json_schema\",\"schema\":…}")
			}
			t.Call.JSONSchema = &llm.JSONSchema{Name: "output", Schema: oc.Format.Schema, Strict: true}
		}
	}
	return t, nil
}

// systemBlocks is a system field's text: a string, or its text blocks
// joined by blank lines.
func (t *Turn) systemBlocks(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	blocks, err := decodeList[anthropicBlock](t, "system", raw)
	if err != nil {
		return "", listError(err, "system", "must be a string or a list of text blocks")
	}
	texts := make([]string, 0, len(blocks))
	for i, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return "", ferr("system", "block %d: a system block is a text block", i)
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n\n"), nil
}

func (t *Turn) anthropicMessages(raw json.RawMessage) error {
	// raw is a slice of a body object checked, so jsonscan may walk it:
	// a list too long is refused unread, and each message is read in
	// turn, with no list of them made first.
	n, more, ok := jsonscan.ArrayLen(raw, MaxMessages)
	if !ok || n == 0 {
		return ferr("messages", "must be a non-empty list of messages")
	}
	if more {
		return ferr("messages", "more than %d messages", MaxMessages)
	}
	// Every role is read before any content, so a message without one
	// is refused before a content error of an earlier one, as when the
	// list was decoded whole.
	for _, m := range jsonscan.Elements(raw) {
		var role string
		if !roleOf(m, &role) {
			return ferr("messages", "must be a non-empty list of messages")
		}
	}
	t.Messages = slices.Grow(t.Messages, n)
	var one [1]anthropicBlock // a text turn's block; the readers below keep no block
	var text string           // a text turn's text (one variable: a pointer to it is taken)
	for i, elem := range jsonscan.Elements(raw) {
		var m struct {
			Role    string
			Content json.RawMessage // jsonscan.Lookup's slice of the body, not a copy
		}
		roleOf(elem, &m.Role) // checked above
		m.Content, _ = jsonscan.Lookup(elem, "content")
		var blocks []anthropicBlock
		text = ""
		if unmarshalString(m.Content, &text) == nil {
			// A user or assistant turn of text is one message of that
			// text (what anthropicUser and anthropicAssistant make of
			// its one block, an empty assistant turn left out), made
			// here without their lists.
			switch m.Role {
			case "user":
				t.Messages = append(t.Messages, messages.Message{Role: messages.RoleUser, Content: messages.TextContent(text)})
				continue
			case "assistant":
				if text != "" {
					t.Messages = append(t.Messages, messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(text)})
				}
				continue
			}
			one[0] = anthropicBlock{Type: "text", Text: &text}
			blocks = one[:]
		}
		param := fmt.Sprintf("messages[%d]", i)
		if blocks == nil && m.Role == "user" {
			// A list of plain text blocks becomes its message without a
			// decoded block each (176 bytes, over six times the JSON of a
			// short one), as anthropicUser would make it.
			parts, ok, err := t.plainTextList(param+".content", m.Content, anthropicTextType)
			if err != nil {
				return err
			}
			if ok {
				if len(parts) > 0 {
					t.Messages = append(t.Messages, messages.Message{Role: messages.RoleUser, Content: content(parts)})
				}
				continue
			}
		}
		if blocks == nil {
			list, err := decodeList[anthropicBlock](t, param+".content", m.Content)
			if err != nil {
				return listError(err, param+".content", "must be a string or a list of content blocks")
			}
			blocks = list
		}
		var err error
		switch m.Role {
		case "user":
			err = t.anthropicUser(param, blocks)
		case "assistant":
			err = t.anthropicAssistant(param, blocks)
		case "system":
			var texts []string
			for j, b := range blocks {
				if b.Type != "text" || b.Text == nil {
					return ferr(fmt.Sprintf("%s.content[%d]", param, j), "a system turn holds text blocks")
				}
				texts = append(texts, *b.Text)
			}
			t.System = append(t.System, strings.Join(texts, "\n\n"))
		default:
			return ferr(param+".role", "%q is not one of user, assistant", m.Role)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// anthropicTextType reports whether a block of type typ is a text block.
func anthropicTextType(typ []byte) bool { return string(typ) == "text" }

// roleOf decodes a message's role as json.Unmarshal into a struct with
// one field, Role, does (every "role" key in any case is decoded, the last
// kept; null leaves it as it was), reporting whether that succeeds. m is
// an element of a list checked as JSON; a key with an escape goes to
// encoding/json.
func roleOf(m []byte, role *string) bool {
	if plainMembers(m, func(key, value []byte) bool {
		return len(key) != 4 || !strings.EqualFold(string(key), "role") || unmarshalRole(value, role) == nil
	}) {
		return true
	}
	var v struct {
		Role string `json:"role"`
	}
	err := json.Unmarshal(m, &v)
	*role = v.Role
	return err == nil
}

// anthropicUser reads a user turn: its tool results become tool messages
// and its other blocks user messages, in the order they came.
func (t *Turn) anthropicUser(param string, blocks []anthropicBlock) error {
	// One array for every part of the turn, made once: each message
	// takes its parts capped, so no append reaches another's.
	parts := make([]messages.Part, 0, len(blocks))
	flush := func() {
		if len(parts) > 0 {
			t.Messages = append(t.Messages, messages.Message{Role: messages.RoleUser, Content: content(parts[:len(parts):len(parts)])})
			parts = parts[len(parts):]
		}
	}
	for j, b := range blocks {
		bp := func() string { return fmt.Sprintf("%s.content[%d]", param, j) } // for an error only
		switch b.Type {
		case "text":
			if b.Text == nil {
				return ferr(bp()+".text", "is required")
			}
			parts = append(parts, messages.Part{Type: messages.PartText, Text: *b.Text})
		case "image":
			im, err := anthropicImage(b.Source)
			if err != nil {
				return ferr(bp()+".source", "%v", err)
			}
			parts = append(parts, messages.Part{Type: messages.PartImage, Image: im})
		case "tool_result":
			if b.ToolUseID == "" {
				return ferr(bp()+".tool_use_id", "is required")
			}
			c, err := t.toolResult(bp()+".content", b.Content)
			if err != nil {
				return err
			}
			if b.IsError {
				c = errorResult(c)
			}
			flush()
			t.Messages = append(t.Messages, messages.Message{Role: messages.RoleTool, Content: c}.WithToolCallID(b.ToolUseID))
		default:
			return ferr(bp()+".type", "%q is not a user block loom reads (text, image, tool_result)", b.Type)
		}
	}
	flush()
	return nil
}

// errorResult marks a failed tool's result in its text, since a Chat
// Completions tool message has no is_error.
func errorResult(c messages.Content) messages.Content {
	if !c.IsList() {
		return messages.TextContent("Error: " + c.Text)
	}
	parts := append([]messages.Part{{Type: messages.PartText, Text: "Error:"}}, c.Parts...)
	return messages.Content{Parts: parts}
}

func (t *Turn) toolResult(param string, raw json.RawMessage) (messages.Content, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return messages.TextContent(""), nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return messages.TextContent(s), nil
	}
	blocks, err := decodeList[anthropicBlock](t, param, raw)
	if err != nil {
		return messages.Content{}, listError(err, param, "must be a string or a list of text and image blocks")
	}
	var parts []messages.Part
	for j, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text != nil {
				parts = append(parts, messages.Part{Type: messages.PartText, Text: *b.Text})
			}
		case "image":
			im, err := anthropicImage(b.Source)
			if err != nil {
				return messages.Content{}, ferr(fmt.Sprintf("%s[%d].source", param, j), "%v", err)
			}
			parts = append(parts, messages.Part{Type: messages.PartImage, Image: im})
		default:
			return messages.Content{}, ferr(fmt.Sprintf("%s[%d].type", param, j), "%q is not text or image", b.Type)
		}
	}
	return content(parts), nil
}

func anthropicImage(src *anthropicSrc) (*messages.Image, error) {
	if src == nil {
		return nil, fmt.Errorf("is required")
	}
	switch src.Type {
	case "base64":
		if src.MediaType == "" || src.Data == "" {
			return nil, fmt.Errorf("a base64 image needs media_type and data")
		}
		return &messages.Image{MIME: src.MediaType, Data: src.Data}, nil
	case "url":
		if src.URL == "" {
			return nil, fmt.Errorf("a url image needs url")
		}
		return &messages.Image{URL: src.URL}, nil
	}
	return nil, fmt.Errorf("type %q is not base64 or url", src.Type)
}

// anthropicAssistant reads an assistant turn into one message: its text,
// its tool calls and its thinking (the text as Reasoning; the thinking and
// redacted_thinking blocks kept as they came, in order, under
// messages.AnthropicThinkingKey, so that an Anthropic upstream gets them
// back signed).
func (t *Turn) anthropicAssistant(param string, blocks []anthropicBlock) error {
	m := messages.Message{Role: messages.RoleAssistant}
	var texts, thinking []string
	var signed []messages.AnthropicBlock
	for j, b := range blocks {
		bp := func() string { return fmt.Sprintf("%s.content[%d]", param, j) } // for an error only
		switch b.Type {
		case "text":
			if b.Text == nil {
				return ferr(bp()+".text", "is required")
			}
			texts = append(texts, *b.Text)
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return ferr(bp(), "a tool_use block needs id and name")
			}
			args := "{}"
			if len(b.Input) > 0 && string(b.Input) != "null" {
				args = string(b.Input)
			}
			m.ToolCalls = append(m.ToolCalls, messages.NewToolCall(b.ID, b.Name, args))
		case "thinking":
			if b.Thinking != nil {
				thinking = append(thinking, *b.Thinking)
			}
			if b.Thinking != nil && b.Signature != "" { // unsigned thinking cannot go back to the API
				signed = append(signed, messages.AnthropicBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
			}
		case "redacted_thinking":
			// Encrypted reasoning only the provider can read: kept to go
			// back as it came.
			if b.Data != "" {
				signed = append(signed, messages.AnthropicBlock{Type: "redacted_thinking", Data: b.Data})
			}
		default:
			return ferr(bp()+".type", "%q is not an assistant block loom reads (text, tool_use, thinking)", b.Type)
		}
	}
	m.Content = messages.TextContent(strings.Join(texts, ""))
	m = m.WithReasoning(strings.Join(thinking, "\n"))
	if len(signed) > 0 {
		m = m.WithExtra(map[string]json.RawMessage{messages.AnthropicThinkingKey: marshal(signed)})
	}
	if m.Content.IsEmpty() && len(m.ToolCalls) == 0 && m.Reasoning() == "" && len(signed) == 0 {
		return nil // an empty turn (a prefill Claude Code left empty)
	}
	t.Messages = append(t.Messages, m)
	return nil
}

// anthropicTools reads custom tools: name, description, input_schema.
func anthropicTools(f map[string]json.RawMessage) ([]llm.Tool, error) {
	tools, _, err := decodeTools(f, toolFields{kind: "custom", optionalKind: true, schema: "input_schema", requireSchema: true,
		refuse: "is a tool the provider runs; loom's upstream takes custom tools only"})
	return tools, err
}

func anthropicToolChoice(f map[string]json.RawMessage) (llm.ToolChoice, *bool, error) {
	if !has(f, "tool_choice") {
		return llm.ToolChoice{}, nil, nil
	}
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
	}
	if err := json.Unmarshal(f["tool_choice"], &tc); err != nil {
		return llm.ToolChoice{}, nil, ferr("tool_choice", "must be an object with a type")
	}
	var parallel *bool
	if tc.DisableParallelToolUse != nil {
		p := !*tc.DisableParallelToolUse
		parallel = &p
	}
	switch tc.Type {
	case "auto":
		return llm.ToolChoice{Mode: llm.ToolChoiceAuto}, parallel, nil
	case "any":
		return llm.ToolChoice{Mode: llm.ToolChoiceRequired}, parallel, nil
	case "none":
		return llm.ToolChoice{Mode: llm.ToolChoiceNone}, parallel, nil
	case "tool":
		if tc.Name == "" {
			return llm.ToolChoice{}, nil, ferr("tool_choice.name", "is required for type tool")
		}
		return llm.ForceTool(tc.Name), parallel, nil
	}
	return llm.ToolChoice{}, nil, ferr("tool_choice.type", "%q is not one of auto, any, tool, none", tc.Type)
}
