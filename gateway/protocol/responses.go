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

// OpenAI's Responses API, inbound: POST /v1/responses.
//
// What is read: model, input (a string, or a list of items: messages with
// input_text, output_text, refusal and input_image parts, function_call,
// function_call_output, item_reference), instructions, tools (function
// tools), tool_choice, text.format (text, json_object, json_schema),
// max_output_tokens, temperature, top_p, parallel_tool_calls, stream,
// store, previous_response_id, user, safety_identifier and metadata
// (session_id, user_id). Reasoning items are skipped: a Chat Completions
// or Anthropic upstream cannot take them back. Anything else (include,
// reasoning, truncation, service_tier, …) is accepted and not sent on.

// Resolver finds an item a request refers to by id (an item_reference):
// the message that holds it, as loom stored it.
type Resolver func(id string) (messages.Message, error)

// DecodeResponses reads a Responses API request. resolve is called for
// each item_reference; nil refuses them.
func DecodeResponses(body []byte, resolve Resolver) (*Turn, error) {
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
	if has(f, "store") {
		store, err := boolean(f, "store")
		if err != nil {
			return nil, err
		}
		t.NoStore = !store
	}
	if t.PreviousResponseID, err = str(f, "previous_response_id"); err != nil {
		return nil, err
	}
	meta, err := stringMap(f, "metadata")
	if err != nil {
		return nil, err
	}
	user, err := str(f, "user")
	if err != nil {
		return nil, err
	}
	safety, err := str(f, "safety_identifier")
	if err != nil {
		return nil, err
	}
	t.User = firstOf(user, safety, meta["user_id"])
	t.Session = firstOf(meta["loom_session"], meta["session_id"])
	if instr, err := str(f, "instructions"); err != nil {
		return nil, err
	} else if instr != "" {
		t.System = append(t.System, instr)
	}
	if err := t.responsesInput(f["input"], resolve); err != nil {
		return nil, err
	}
	if t.Call.MaxTokens, err = positive(f, "max_output_tokens"); err != nil {
		return nil, err
	}
	if t.Call.Temperature, err = number(f, "temperature", nil); err != nil {
		return nil, err
	}
	if _, err = number(f, "top_p", t.Call.Extra); err != nil {
		return nil, err
	}
	if has(f, "parallel_tool_calls") {
		p, err := boolean(f, "parallel_tool_calls")
		if err != nil {
			return nil, err
		}
		t.Parallel = &p
	}
	if t.Call.Tools, t.ToolsLeftOut, err = responsesTools(f); err != nil {
		return nil, err
	}
	if t.Call.ToolChoice, err = responsesToolChoice(f); err != nil {
		return nil, err
	}
	if t.Call.JSONSchema, err = responsesFormat(f); err != nil {
		return nil, err
	}
	return t, nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// responsesItem is one input item; which fields count depends on Type.
type responsesItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"-"` // jsonscan.Lookup's slice of the body, not a copy
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// decode is json.Unmarshal(raw, it) (every key matching a field in any
// case decoded, the last kept; null leaves a field as it was), read
// member by member when every key is plain and names a string field or
// none. An output, or a key with an escape, goes to encoding/json.
func (it *responsesItem) decode(raw []byte) error {
	if plainMembers(raw, func(key, value []byte) bool {
		var field *string
		switch k := string(key); {
		case strings.EqualFold(k, "type"):
			field = &it.Type
		case strings.EqualFold(k, "id"):
			field = &it.ID
		case strings.EqualFold(k, "role"):
			return unmarshalRole(value, &it.Role) == nil
		case strings.EqualFold(k, "call_id"):
			field = &it.CallID
		case strings.EqualFold(k, "name"):
			field = &it.Name
		case strings.EqualFold(k, "arguments"):
			field = &it.Arguments
		case strings.EqualFold(k, "output"):
			return false
		}
		return field == nil || unmarshalString(value, field) == nil
	}) {
		return nil
	}
	var v responsesItem // not it: a pointer handed to encoding/json would move every item to the heap
	err := json.Unmarshal(raw, &v)
	*it = v
	return err
}

type responsesPart struct {
	Type     string  `json:"type"`
	Text     *string `json:"text"`
	Refusal  string  `json:"refusal"`
	ImageURL string  `json:"image_url"`
	FileID   string  `json:"file_id"`
}

func (t *Turn) responsesInput(raw json.RawMessage, resolve Resolver) error {
	if len(raw) == 0 || string(raw) == "null" {
		if t.PreviousResponseID == "" {
			return ferr("input", "is required")
		}
		return nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		t.Messages = append(t.Messages, messages.Message{Role: messages.RoleUser, Content: messages.TextContent(text)})
		return nil
	}
	// raw is a slice of a body object checked, so jsonscan may walk it:
	// a list too long is refused unread, and each item is decoded in
	// turn, with no list of the items made first.
	n, more, ok := jsonscan.ArrayLen(raw, MaxMessages)
	if !ok {
		return ferr("input", "must be a string or a list of input items")
	}
	if more {
		return ferr("input", "more than %d items", MaxMessages)
	}
	t.Messages = slices.Grow(t.Messages, n)
	for i, rawItem := range jsonscan.Elements(raw) {
		param := func() string { return fmt.Sprintf("input[%d]", i) } // for an error only
		var it responsesItem
		if err := it.decode(rawItem); err != nil {
			return ferr(param(), "must be an input item object")
		}
		it.Content, _ = jsonscan.Lookup(rawItem, "content")
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		switch it.Type {
		case "message":
			if err := t.responsesMessage(param, it); err != nil {
				return err
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return ferr(param(), "a function_call needs call_id and name")
			}
			t.addCall(messages.NewToolCall(it.CallID, it.Name, it.Arguments))
		case "function_call_output":
			if it.CallID == "" {
				return ferr(param()+".call_id", "is required")
			}
			out, err := t.responsesOutput(param()+".output", it.Output)
			if err != nil {
				return err
			}
			t.Messages = append(t.Messages, messages.Message{Role: messages.RoleTool, Content: out}.WithToolCallID(it.CallID))
		case "item_reference":
			if it.ID == "" {
				return ferr(param()+".id", "is required")
			}
			if resolve == nil {
				return ferr(param(), "item %q is not one loom stored; send the item itself", it.ID)
			}
			m, err := resolve(it.ID)
			if err != nil {
				return ferr(param(), "%v", err)
			}
			if m.Role == messages.RoleAssistant && m.Content.IsEmpty() {
				for _, tc := range m.ToolCalls {
					t.addCall(tc)
				}
				continue
			}
			t.Messages = append(t.Messages, m)
		case "reasoning":
			// Its text is the upstream's to read back, and neither a Chat
			// Completions nor an Anthropic upstream takes it.
		default:
			return ferr(param()+".type", "%q is not an input item loom reads (message, function_call, function_call_output, item_reference)", it.Type)
		}
	}
	return nil
}

// addCall puts a tool call on the assistant message it follows, or on a
// new one.
func (t *Turn) addCall(tc messages.ToolCall) {
	if n := len(t.Messages); n > 0 && t.Messages[n-1].Role == messages.RoleAssistant {
		t.Messages[n-1].ToolCalls = append(t.Messages[n-1].ToolCalls, tc)
		return
	}
	t.Messages = append(t.Messages, messages.Message{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{tc}})
}

func (t *Turn) responsesMessage(param func() string, it responsesItem) error {
	var text string
	var parts []messages.Part
	if unmarshalString(it.Content, &text) == nil {
		// As content() has one text part, without the list.
		switch it.Role {
		case "user":
			t.Messages = append(t.Messages, messages.Message{Role: messages.RoleUser, Content: messages.TextContent(text)})
			return nil
		case "assistant":
			t.Messages = append(t.Messages, messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(text)})
			return nil
		}
		parts = []messages.Part{{Type: messages.PartText, Text: text}}
	} else {
		var err error
		if parts, err = t.responsesParts(param()+".content", it.Content); err != nil {
			return err
		}
	}
	c := content(parts)
	switch it.Role {
	case "system", "developer":
		t.System = append(t.System, TextOf(c))
	case "user":
		t.Messages = append(t.Messages, messages.Message{Role: messages.RoleUser, Content: c})
	case "assistant":
		for _, p := range parts {
			if p.Type != messages.PartText {
				return ferr(param()+".content", "an assistant message holds text only")
			}
		}
		// Assistant text that follows its own tool calls (or they it)
		// stays one message, as Chat Completions has it.
		t.Messages = append(t.Messages, messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(TextOf(c))})
	default:
		return ferr(param()+".role", "%q is not one of user, assistant, system, developer", it.Role)
	}
	return nil
}

// responsesParts reads a message's list of content parts; param names
// the list.
func (t *Turn) responsesParts(param string, raw json.RawMessage) ([]messages.Part, error) {
	// A list of plain text parts becomes its parts without a decoded
	// part each (72 bytes, over twice the JSON of a short one, and a
	// string and a pointer for its text), as decodeParts would make them.
	parts, ok, err := t.plainTextList(param, raw, responsesTextType)
	if err != nil || ok {
		return parts, err
	}
	return t.decodeParts(param, raw)
}

// decodeParts is responsesParts for every shape of list: each part
// decoded by encoding/json, then made a messages.Part.
func (t *Turn) decodeParts(param string, raw json.RawMessage) ([]messages.Part, error) {
	ps, err := decodeList[responsesPart](t, param, raw)
	if err != nil {
		return nil, listError(err, param, "must be a string or a list of content parts")
	}
	parts := make([]messages.Part, 0, len(ps))
	for j, p := range ps {
		pp := func() string { return fmt.Sprintf("%s[%d]", param, j) } // for an error only
		switch p.Type {
		case "input_text", "output_text", "text":
			if p.Text == nil {
				return nil, ferr(pp()+".text", "is required")
			}
			parts = append(parts, messages.Part{Type: messages.PartText, Text: *p.Text})
		case "refusal":
			parts = append(parts, messages.Part{Type: messages.PartText, Text: p.Refusal})
		case "input_image":
			if p.ImageURL == "" {
				return nil, ferr(pp()+".image_url", "is required (loom keeps no files, so file_id is not enough)")
			}
			im, err := imageFromURL(p.ImageURL)
			if err != nil {
				return nil, ferr(pp()+".image_url", "%v", err)
			}
			parts = append(parts, messages.Part{Type: messages.PartImage, Image: im})
		default:
			return nil, ferr(pp()+".type", "%q is not a content part loom reads (input_text, output_text, refusal, input_image)", p.Type)
		}
	}
	return parts, nil
}

// responsesTextType reports whether a content part of type typ is text
// read from its "text" key.
func responsesTextType(typ []byte) bool {
	switch string(typ) {
	case "input_text", "output_text", "text":
		return true
	}
	return false
}

// responsesOutput reads a function_call_output's output: a string, or a
// list of input_text and input_image parts.
func (t *Turn) responsesOutput(param string, raw json.RawMessage) (messages.Content, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return messages.TextContent(s), nil
	}
	ps, err := decodeList[responsesPart](t, param, raw)
	if err != nil {
		return messages.Content{}, listError(err, param, "must be a string or a list of content parts")
	}
	var parts []messages.Part
	for j, p := range ps {
		switch p.Type {
		case "input_text", "output_text", "text":
			if p.Text != nil {
				parts = append(parts, messages.Part{Type: messages.PartText, Text: *p.Text})
			}
		case "input_image":
			im, err := imageFromURL(p.ImageURL)
			if err != nil {
				return messages.Content{}, ferr(fmt.Sprintf("%s[%d].image_url", param, j), "%v", err)
			}
			parts = append(parts, messages.Part{Type: messages.PartImage, Image: im})
		default:
			return messages.Content{}, ferr(fmt.Sprintf("%s[%d].type", param, j), "%q is not input_text or input_image", p.Type)
		}
	}
	return content(parts), nil
}

// responsesTools reads function tools: name, description, parameters.
// Other tools (the ones the provider runs, such as web_search, and
// namespaces of tools) are left out: an agent like Codex offers them with
// every request, and a Chat Completions or Anthropic upstream can run
// none of them.
func responsesTools(f map[string]json.RawMessage) ([]llm.Tool, []string, error) {
	return decodeTools(f, toolFields{kind: "function", schema: "parameters", leaveOut: true})
}

func responsesToolChoice(f map[string]json.RawMessage) (llm.ToolChoice, error) {
	if !has(f, "tool_choice") {
		return llm.ToolChoice{}, nil
	}
	var mode string
	if json.Unmarshal(f["tool_choice"], &mode) == nil {
		switch mode {
		case "auto":
			return llm.ToolChoice{Mode: llm.ToolChoiceAuto}, nil
		case "none":
			return llm.ToolChoice{Mode: llm.ToolChoiceNone}, nil
		case "required":
			return llm.ToolChoice{Mode: llm.ToolChoiceRequired}, nil
		}
		return llm.ToolChoice{}, ferr("tool_choice", "%q is not one of auto, none, required", mode)
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(f["tool_choice"], &named) != nil || named.Type != "function" || named.Name == "" {
		return llm.ToolChoice{}, ferr("tool_choice", "must be auto, none, required or {\"type\":\"function\",\"name\":…}")
	}
	return llm.ForceTool(named.Name), nil
}

func responsesFormat(f map[string]json.RawMessage) (*llm.JSONSchema, error) {
	if !has(f, "text") {
		return nil, nil
	}
	var text struct {
		Format *struct {
			Type   string         `json:"type"`
			Name   string         `json:"name"`
			Schema map[string]any `json:"schema"`
			Strict *bool          `json:"strict"`
		} `json:"format"`
	}
	if err := json.Unmarshal(f["text"], &text); err != nil {
		return nil, ferr("text", "must be an object")
	}
	if text.Format == nil {
		return nil, nil
	}
	switch text.Format.Type {
	case "text", "json_object":
		return nil, nil
	case "json_schema":
		if text.Format.Schema == nil {
			return nil, ferr("text.format.schema", "is required")
		}
		return &llm.JSONSchema{Name: text.Format.Name, Schema: text.Format.Schema, Strict: text.Format.Strict != nil && *text.Format.Strict}, nil
	}
	return nil, ferr("text.format.type", "%q is not one of text, json_object, json_schema", text.Format.Type)
}
