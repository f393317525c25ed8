// Package fittest holds what the tests of context-window fitting share: a
// long conversation with tool rounds, an independent token count of a
// request as the upstream receives it, and a check that no tool call or
// result is orphaned.
package fittest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/loomctx/loom/messages"
)

// Filler is n words of plain prose, different for each seed.
func Filler(seed, n int) string {
	words := []string{"river", "ledger", "amber", "quartz", "harbor", "meadow", "signal", "copper", "lantern", "orbit", "thistle", "cobalt"}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(seed*7+i*3+i/5)%len(words)])
	}
	return b.String()
}

// Conversation is turns of a user question, an assistant tool call, its
// result and the assistant's answer: four messages and about words
// tokens a turn.
func Conversation(turns, words int) []messages.Message {
	var msgs []messages.Message
	for i := range turns {
		id := fmt.Sprintf("call_%03d", i)
		msgs = append(msgs,
			messages.Message{Role: messages.RoleUser, Content: messages.TextContent(fmt.Sprintf("question %d: %s", i, Filler(i, words/4)))},
			messages.Message{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{messages.NewToolCall(id, "search", fmt.Sprintf(`{"q":"turn %d"}`, i))}},
			messages.Message{Role: messages.RoleTool, Content: messages.TextContent(Filler(i+1, words/2))}.WithToolCallID(id),
			messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(fmt.Sprintf("answer %d: %s", i, Filler(i+2, words/4)))},
		)
	}
	return msgs
}

// WireMessage is a Chat Completions message as an upstream reads it.
type WireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []WireCall      `json:"tool_calls"`
}

// WireCall is a tool call as an upstream reads it.
type WireCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Text is the message's content text: the string, or its text parts.
func (m WireMessage) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Tokens counts a Chat Completions messages array the way OpenAI's
// cookbook does, independently of package fit: 3 tokens of framing per
// message, its role, content text and tool_call_id, each tool call's id,
// name and arguments, and 3 to prime the reply.
func Tokens(count func(string) int, msgs []WireMessage) int {
	n := 3
	for _, m := range msgs {
		n += 3 + count(m.Role) + count(m.ToolCallID)
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			n += count(s)
		} else {
			var parts []struct{ Text string }
			json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				n += count(p.Text)
			}
		}
		for _, tc := range m.ToolCalls {
			n += count(tc.ID) + count(tc.Function.Name) + count(tc.Function.Arguments)
		}
	}
	return n
}

// Wire is msgs in their OpenAI form, read back as an upstream reads them.
func Wire(msgs []messages.Message) ([]WireMessage, error) {
	wire, err := messages.OpenAI(msgs)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(wire)
	if err != nil {
		return nil, err
	}
	var out []WireMessage
	return out, json.Unmarshal(data, &out)
}

// Orphans describes each tool call without its result after it, and each
// tool result without its call in the assistant message before its run.
func Orphans(msgs []WireMessage) []string {
	var bad []string
	for i, m := range msgs {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			results := map[string]bool{}
			for j := i + 1; j < len(msgs) && msgs[j].Role == "tool"; j++ {
				results[msgs[j].ToolCallID] = true
			}
			for _, tc := range m.ToolCalls {
				if !results[tc.ID] {
					bad = append(bad, fmt.Sprintf("message %d: tool call %s has no result", i, tc.ID))
				}
			}
		case m.Role == "tool":
			j := i - 1
			for j >= 0 && msgs[j].Role == "tool" {
				j--
			}
			if j < 0 || !slices.ContainsFunc(msgs[j].ToolCalls, func(tc WireCall) bool { return tc.ID == m.ToolCallID }) {
				bad = append(bad, fmt.Sprintf("message %d: tool result %s has no call", i, m.ToolCallID))
			}
		}
	}
	return bad
}
