package gateway_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/fittest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/tokens"
)

// clientConversation is some 40k tokens of history with tool rounds, then
// a question, as a client sends it.
func clientConversation(t *testing.T, turns int) []any {
	t.Helper()
	hist := append(fittest.Conversation(turns, 300), messages.Message{Role: messages.RoleUser, Content: messages.TextContent("FINAL-QUESTION-5c1: what did we find?")})
	wire, err := messages.OpenAI(hist)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(wire)
	var out []any
	json.Unmarshal(data, &out)
	return append([]any{map[string]any{"role": "system", "content": "CLIENT-SYSTEM-3e9"}}, out...)
}

// TestGatewayFitsContextWindow is the test: llm.context_window
// 8000, a client sending ~40k tokens of history with tool-call pairs and
// max_tokens 500. The upstream receives at most 7,500 tokens, counted
// here from what it received; the newest turns whole and contiguous; no
// orphaned tool call or result; a note at the cut; and the reply's header
// says how many messages were left out. A request that fits passes
// unchanged.
func TestGatewayFitsContextWindow(t *testing.T) {
	e := setup(t, "  context_window: 8000\n")
	c, _ := tokens.Get(tokens.O200kBase)
	sent := clientConversation(t, 110)
	res := e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "messages": sent, "max_tokens": 500, "user": "ann"})
	if body := readAll(t, res); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	var got struct{ Messages []fittest.WireMessage }
	if err := json.Unmarshal(e.up.last(t).Raw, &got); err != nil {
		t.Fatal(err)
	}
	msgs := got.Messages
	n := fittest.Tokens(c.Count, msgs)
	dropped, _ := strconv.Atoi(res.Header.Get("X-Loom-History-Dropped"))
	t.Logf("upstream got %d messages, %d tokens; X-Loom-History-Dropped %s, X-Loom-Prompt-Tokens %s",
		len(msgs), n, res.Header.Get("X-Loom-History-Dropped"), res.Header.Get("X-Loom-Prompt-Tokens"))
	if n > 7500 {
		t.Errorf("the upstream got %d tokens, over 7,500", n)
	}
	if res.Header.Get("X-Loom-Prompt-Tokens") != strconv.Itoa(n) {
		t.Errorf("X-Loom-Prompt-Tokens %s, the upstream got %d", res.Header.Get("X-Loom-Prompt-Tokens"), n)
	}
	clientHist := len(sent) - 2 // less the client's system message and the question
	if dropped <= 0 || len(msgs) != 1+1+(clientHist-dropped)+1 {
		t.Fatalf("%d messages for %d dropped of %d", len(msgs), dropped, clientHist)
	}
	if !strings.Contains(msgs[0].Text(), "MARKER-AGENTS-7f3") || !strings.Contains(msgs[0].Text(), "CLIENT-SYSTEM-3e9") {
		t.Errorf("loom's prompt or the client's system text is missing")
	}
	if msgs[1].Role != "user" || !strings.HasPrefix(msgs[1].Text(), fmt.Sprintf("[loom: %d earlier messages", dropped)) {
		t.Errorf("no note at the cut: %q", msgs[1].Text())
	}
	// The newest history whole and in order, as the client sent it.
	for i := 2; i < len(msgs)-1; i++ {
		want, _ := json.Marshal(sent[1+dropped+i-2])
		var w fittest.WireMessage
		json.Unmarshal(want, &w)
		if a, b := fmt.Sprint(msgs[i]), fmt.Sprint(w); a != b {
			t.Fatalf("message %d is not the client's message %d:\n%s\n%s", i, 1+dropped+i-2, a, b)
		}
	}
	if msgs[2].Role != "user" {
		t.Errorf("the kept history starts with %s, not a whole turn", msgs[2].Role)
	}
	if last := msgs[len(msgs)-1]; !strings.HasPrefix(last.Text(), "FINAL-QUESTION-5c1") {
		t.Errorf("the current message is not last: %q", last.Text())
	}
	for _, o := range fittest.Orphans(msgs) {
		t.Error(o)
	}

	// A request that fits: every message goes as it came.
	small := clientConversation(t, 3)
	res = e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "messages": small, "max_tokens": 500})
	readAll(t, res)
	got.Messages = nil // a fresh decode: Unmarshal keeps old elements' fields a new one lacks
	if err := json.Unmarshal(e.up.last(t).Raw, &got); err != nil {
		t.Fatal(err)
	}
	if res.Header.Get("X-Loom-History-Dropped") != "0" || len(got.Messages) != len(small) {
		t.Errorf("a request that fits: dropped %q, %d messages for %d sent", res.Header.Get("X-Loom-History-Dropped"), len(got.Messages), len(small))
	}
	for i := 1; i < len(small)-1; i++ {
		want, _ := json.Marshal(small[i])
		var w fittest.WireMessage
		json.Unmarshal(want, &w)
		if fmt.Sprint(got.Messages[i]) != fmt.Sprint(w) {
			t.Errorf("message %d changed", i)
		}
	}
	if n := fittest.Tokens(c.Count, got.Messages); res.Header.Get("X-Loom-Prompt-Tokens") != strconv.Itoa(n) {
		t.Errorf("X-Loom-Prompt-Tokens %s, the upstream got %d", res.Header.Get("X-Loom-Prompt-Tokens"), n)
	}

	// max_tokens that leaves no room is the client's error, named.
	res = e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "messages": small, "max_tokens": 8000})
	if body := readAll(t, res); res.StatusCode != 400 || !strings.Contains(body, "8000 tokens for the reply leave no room") {
		t.Errorf("max_tokens 8000: %d %s", res.StatusCode, body)
	}
}

// TestGatewayFitKeepsPrefixAcrossTurns plays 20 turns of a conversation
// longer than the window through the gateway: what the upstream receives
// keeps its prefix (the X-Loom-Cache-Break header stays away) except at the
// few turns where a step of history goes.
func TestGatewayFitKeepsPrefixAcrossTurns(t *testing.T) {
	e := setup(t, "  context_window: 8000\n")
	sent := clientConversation(t, 60)
	sent = sent[:len(sent)-1] // the question is per turn
	breaks, dropping := 0, 0
	var prev []json.RawMessage
	var shared []int
	for turn := range 20 {
		msgs := append(append([]any(nil), sent...), map[string]any{"role": "user", "content": fmt.Sprintf("turn %d: go on", turn)})
		res := e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "messages": msgs, "max_tokens": 500}, "X-Loom-Session", "prefix-test")
		if body := readAll(t, res); res.StatusCode != 200 {
			t.Fatalf("turn %d: %d %s", turn, res.StatusCode, body)
		}
		if res.Header.Get("X-Loom-History-Dropped") != "0" {
			dropping++
		}
		if res.Header.Get("X-Loom-Cache-Break") != "" {
			breaks++
		}
		var got struct{ Messages []json.RawMessage }
		json.Unmarshal(e.up.last(t).Raw, &got)
		if prev != nil {
			// Everything the previous request sent but its last message is
			// sent again, byte for byte, unless a step dropped history.
			same := len(prev)-1 <= len(got.Messages)
			for i := 0; same && i < len(prev)-1; i++ {
				same = string(prev[i]) == string(got.Messages[i])
			}
			if same {
				shared = append(shared, len(prev)-1)
			}
		}
		prev = got.Messages
		// The client's next turn: this question, a tool round and an answer.
		next := fittest.Conversation(1, 300)
		wire, _ := messages.OpenAI(next[1:])
		data, _ := json.Marshal(wire)
		var more []any
		json.Unmarshal(data, &more)
		sent = append(append(msgs, more[:2]...), more[2])
		sent = sent[:len(sent):len(sent)]
	}
	t.Logf("20 turns, %d dropping history: %d cache breaks; %d consecutive pairs shared their prefix (messages: %v)", dropping, breaks, len(shared), shared)
	if dropping != 20 {
		t.Fatalf("%d of 20 turns dropped history; the test wants every one over the window", dropping)
	}
	if breaks > 6 || len(shared) < 13 {
		t.Errorf("%d cache breaks and %d shared prefixes in 20 turns: steps should keep most turns' prefix", breaks, len(shared))
	}
}

// TestGatewayFitsContextWindowAnthropic: the same conversation to an
// Anthropic upstream. What it receives, every string in its system blocks
// and messages counted plus 3 tokens a turn, stays within 7,500 tokens,
// and its tool_use blocks all have their tool_result.
func TestGatewayFitsContextWindowAnthropic(t *testing.T) {
	e, up := setupAnthropic(t, "  context_window: 8000\n")
	c, _ := tokens.Get(tokens.O200kBase)
	sent := clientConversation(t, 110)
	res := e.post(t, "/v1/chat/completions", map[string]any{"model": "claude-fake", "messages": sent, "max_tokens": 500})
	if body := readAll(t, res); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	body := up.last(t).Body
	var strs func(v any) int
	strs = func(v any) int {
		switch v := v.(type) {
		case string:
			return c.Count(v)
		case []any:
			n := 0
			for _, x := range v {
				n += strs(x)
			}
			return n
		case map[string]any:
			n := 0
			for k, x := range v {
				if k != "type" && k != "role" { // the block types and roles are framing
					n += strs(x)
				}
			}
			return n
		}
		return 0
	}
	turns := body["messages"].([]any)
	n := 3 + strs(body["system"]) + strs(turns) + 3*len(turns)
	t.Logf("Anthropic upstream got %d turns, %d tokens by this count; X-Loom-History-Dropped %s", len(turns), n, res.Header.Get("X-Loom-History-Dropped"))
	if n > 7500 || res.Header.Get("X-Loom-History-Dropped") == "0" {
		t.Errorf("%d tokens, dropped %s", n, res.Header.Get("X-Loom-History-Dropped"))
	}
	uses, results := map[string]bool{}, map[string]bool{}
	for _, turn := range turns {
		for _, b := range turn.(map[string]any)["content"].([]any) {
			blk := b.(map[string]any)
			switch blk["type"] {
			case "tool_use":
				uses[blk["id"].(string)] = true
			case "tool_result":
				results[blk["tool_use_id"].(string)] = true
			}
		}
	}
	for id := range uses {
		if !results[id] {
			t.Errorf("tool_use %s has no tool_result", id)
		}
	}
	for id := range results {
		if !uses[id] {
			t.Errorf("tool_result %s has no tool_use", id)
		}
	}
	first := turns[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.HasPrefix(first, "[loom: ") {
		t.Errorf("the first turn does not open with the note: %.80q", first)
	}
}

// responsesInput is the conversation as Responses API input items.
func responsesInput(hist []messages.Message) []any {
	var items []any
	for _, m := range hist {
		switch {
		case m.Role == messages.RoleTool:
			items = append(items, map[string]any{"type": "function_call_output", "call_id": m.ToolCallID(), "output": m.Content.Text})
		case len(m.ToolCalls) > 0:
			for _, tc := range m.ToolCalls {
				items = append(items, map[string]any{"type": "function_call", "call_id": tc.ID, "name": tc.Function.Name, "arguments": tc.Function.Arguments})
			}
		default:
			items = append(items, map[string]any{"role": string(m.Role), "content": m.Content.Text})
		}
	}
	return items
}

// anthropicMessages is the conversation as Messages API messages: tool
// calls as tool_use blocks, results as tool_result blocks in a user turn.
func anthropicMessages(hist []messages.Message) []any {
	var out []any
	for _, m := range hist {
		switch {
		case m.Role == messages.RoleTool:
			out = append(out, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID(), "content": m.Content.Text}}})
		case len(m.ToolCalls) > 0:
			var blocks []any
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": json.RawMessage(tc.Function.Arguments)})
			}
			out = append(out, map[string]any{"role": "assistant", "content": blocks})
		default:
			out = append(out, map[string]any{"role": string(m.Role), "content": m.Content.Text})
		}
	}
	return out
}

// TestGatewayFitsContextWindowOtherProtocols: the same ~40k-token
// conversation through POST /v1/responses and POST /v1/messages reaches
// the (OpenAI-compatible) upstream within 7,500 tokens, with the note, the
// newest turns and no orphan; the reply says how many messages went. A
// conversation that fits passes whole.
func TestGatewayFitsContextWindowOtherProtocols(t *testing.T) {
	e := setup(t, "  context_window: 8000\n")
	c, _ := tokens.Get(tokens.O200kBase)
	hist := append(fittest.Conversation(110, 300), messages.Message{Role: messages.RoleUser, Content: messages.TextContent("FINAL-QUESTION-5c1: what did we find?")})
	short := append(fittest.Conversation(3, 300), hist[len(hist)-1])
	for _, tc := range []struct {
		path string
		body func(h []messages.Message) map[string]any
	}{
		{"/v1/responses", func(h []messages.Message) map[string]any {
			return map[string]any{"model": "fake-model", "instructions": "CLIENT-SYSTEM-3e9", "input": responsesInput(h), "max_output_tokens": 500, "store": false}
		}},
		{"/v1/messages", func(h []messages.Message) map[string]any {
			return map[string]any{"model": "fake-model", "system": "CLIENT-SYSTEM-3e9", "messages": anthropicMessages(h), "max_tokens": 500}
		}},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/v1/"), func(t *testing.T) {
			res := e.post(t, tc.path, tc.body(hist), "anthropic-version", "2023-06-01")
			if body := readAll(t, res); res.StatusCode != 200 {
				t.Fatalf("%d %s", res.StatusCode, body)
			}
			var got struct{ Messages []fittest.WireMessage }
			if err := json.Unmarshal(e.up.last(t).Raw, &got); err != nil {
				t.Fatal(err)
			}
			msgs := got.Messages
			n := fittest.Tokens(c.Count, msgs)
			dropped, _ := strconv.Atoi(res.Header.Get("X-Loom-History-Dropped"))
			t.Logf("upstream got %d messages, %d tokens; X-Loom-History-Dropped %d", len(msgs), n, dropped)
			if n > 7500 || dropped == 0 {
				t.Errorf("%d tokens, %d dropped", n, dropped)
			}
			if !strings.Contains(msgs[0].Text(), "CLIENT-SYSTEM-3e9") || !strings.HasPrefix(msgs[1].Text(), fmt.Sprintf("[loom: %d earlier messages", dropped)) {
				t.Errorf("no system or no note: %.80q", msgs[1].Text())
			}
			if msgs[2].Role != "user" || !strings.HasPrefix(msgs[len(msgs)-1].Text(), "FINAL-QUESTION-5c1") {
				t.Errorf("the kept history does not start a turn, or the question is not last")
			}
			want, _ := fittest.Wire(hist[dropped:])
			for i, w := range want[:len(want)-1] {
				if fmt.Sprint(msgs[2+i]) != fmt.Sprint(w) {
					t.Fatalf("message %d is not the conversation's message %d", 2+i, dropped+i)
				}
			}
			for _, o := range fittest.Orphans(msgs) {
				t.Error(o)
			}

			res = e.post(t, tc.path, tc.body(short), "anthropic-version", "2023-06-01")
			readAll(t, res)
			got.Messages = nil
			json.Unmarshal(e.up.last(t).Raw, &got)
			if res.Header.Get("X-Loom-History-Dropped") != "0" || len(got.Messages) != len(short)+1 {
				t.Errorf("a conversation that fits: dropped %q, %d messages for %d", res.Header.Get("X-Loom-History-Dropped"), len(got.Messages), len(short))
			}
		})
	}
}

// TestGatewayFitNoteCarriesHistory: where the gateway drops the client's
// history in a session whose start consolidation has summarised, the note
// at the cut quotes the conversation log's latest entries; in a session
// never consolidated it only counts. The gateway reads the session's
// pointer alone (its metadata record), not the whole session.
func TestGatewayFitNoteCarriesHistory(t *testing.T) {
	e := setup(t, "  context_window: 8000\n")
	put := func(rel, text string) {
		p := filepath.Join(e.dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put("memory/HISTORY.md", "[2026-02-27 09:00] HIST-ENTRY-4d1: the team chose churn as the metric.\n")
	put(".loom/sessions/summed.jsonl",
		`{"_type":"metadata","key":"summed","created_at":"2026-02-27T09:00:00Z","updated_at":"2026-02-27T09:00:00Z","last_consolidated":2}`+"\n"+
			`{"role":"user","content":"Let us plan."}`+"\n"+`{"role":"assistant","content":"Churn first."}`+"\n")
	for _, key := range []string{"summed", "fresh"} {
		res := e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "messages": clientConversation(t, 110), "max_tokens": 500},
			"X-Loom-Session", key)
		if body := readAll(t, res); res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", key, res.StatusCode, body)
		}
		var got struct{ Messages []fittest.WireMessage }
		if err := json.Unmarshal(e.up.last(t).Raw, &got); err != nil {
			t.Fatal(err)
		}
		note := got.Messages[1].Text()
		if !strings.HasPrefix(note, "[loom: ") {
			t.Fatalf("%s: no note at the cut: %.80q", key, note)
		}
		if has := strings.Contains(note, "HIST-ENTRY-4d1"); has != (key == "summed") {
			t.Errorf("%s: the log's entry in the note: %v\n%s", key, has, note)
		}
	}
}
