package messages

import (
	"fmt"

	"github.com/openai/openai-go/v3"
)

// OpenAI converts messages to the Chat Completions messages array, built
// from the official SDK's param types. Reasoning text is left out: Chat
// Completions has no field for it. Tool results keep text only, with
// "[image]" for an image.
func OpenAI(msgs []Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for i, m := range msgs {
		p, err := openAIMessage(m)
		if err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// OpenAI converts the built turn; see the package-level OpenAI.
func (r *Result) OpenAI() ([]openai.ChatCompletionMessageParamUnion, error) {
	return OpenAI(r.Messages)
}

func openAIMessage(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleSystem:
		if m.Content.IsList() {
			return openai.SystemMessage(textParts(m.Content)), nil
		}
		return openai.SystemMessage(m.Content.Text), nil
	case RoleUser:
		var u openai.ChatCompletionMessageParamUnion
		if m.Content.IsList() {
			parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(m.Content.Parts))
			for _, p := range m.Content.Parts {
				if p.Type == PartImage {
					parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: p.Image.URLString()}))
				} else {
					parts = append(parts, openai.TextContentPart(p.Text))
				}
			}
			u = openai.UserMessage(parts)
		} else {
			u = openai.UserMessage(m.Content.Text)
		}
		if m.Name != "" {
			u.OfUser.Name = openai.String(m.Name)
		}
		return u, nil
	case RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		switch {
		case m.Content.IsList():
			for _, p := range m.Content.Parts {
				if p.Type == PartImage {
					return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("assistant content cannot hold an image")
				}
				a.Content.OfArrayOfContentParts = append(a.Content.OfArrayOfContentParts,
					openai.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{OfText: &openai.ChatCompletionContentPartTextParam{Text: p.Text}})
			}
		case m.Content.Text != "" || len(m.ToolCalls) == 0:
			a.Content.OfString = openai.String(m.Content.Text)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
				},
			})
		}
		if m.Name != "" {
			a.Name = openai.String(m.Name)
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case RoleTool:
		if m.Content.IsList() {
			return openai.ToolMessage(textParts(m.Content), m.ToolCallID), nil
		}
		return openai.ToolMessage(m.Content.Text, m.ToolCallID), nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
}

// textParts turns list content into text parts, an image into "[image]".
func textParts(c Content) []openai.ChatCompletionContentPartTextParam {
	parts := make([]openai.ChatCompletionContentPartTextParam, 0, len(c.Parts))
	for _, p := range c.Parts {
		text := p.Text
		if p.Type == PartImage {
			text = imagePlaceholder
		}
		parts = append(parts, openai.ChatCompletionContentPartTextParam{Text: text})
	}
	return parts
}
