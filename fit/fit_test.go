package fit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/internal/fittest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/tokens"
)

func counter(t testing.TB) tokens.Counter {
	t.Helper()
	c, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func system(text string) messages.Message {
	return messages.Message{Role: messages.RoleSystem, Content: messages.TextContent(text)}
}

func user(text string) messages.Message {
	return messages.Message{Role: messages.RoleUser, Content: messages.TextContent(text)}
}

// wireTokens counts a request the way the upstream sees it, from its
// OpenAI wire form and independently of fit.MessageTokens.
func wireTokens(t testing.TB, c tokens.Counter, msgs []messages.Message) int {
	t.Helper()
	wire, err := fittest.Wire(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return fittest.Tokens(c.Count, wire)
}

// checkPairs fails on an orphaned tool call or result.
func checkPairs(t *testing.T, msgs []messages.Message) {
	t.Helper()
	wire, err := fittest.Wire(msgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range fittest.Orphans(wire) {
		t.Error(o)
	}
}

func TestFitsUnchanged(t *testing.T) {
	c := counter(t)
	msgs := append([]messages.Message{system("You are terse.")}, fittest.Conversation(3, 80)...)
	msgs = append(msgs, user("and now?"))
	res, err := fit.Fit(msgs, fit.Options{Window: 8000, Reserve: 500, Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	if &res.Messages[0] != &msgs[0] || len(res.Messages) != len(msgs) {
		t.Fatalf("a request that fits came back changed: %d messages, was %d", len(res.Messages), len(msgs))
	}
	if res.Report.Changed() || res.Report.Dropped != 0 || res.Report.Note {
		t.Errorf("report of a request that fits: %+v", res.Report)
	}
	if want := wireTokens(t, c, msgs); res.Report.Tokens != want {
		t.Errorf("Tokens = %d, the wire form counts %d", res.Report.Tokens, want)
	}
}

func TestFitDropsOldestUnits(t *testing.T) {
	c := counter(t)
	hist := fittest.Conversation(110, 300)
	msgs := append([]messages.Message{system("You are a careful research assistant.")}, hist...)
	msgs = append(msgs, user("What did we find in the end?"))
	before := wireTokens(t, c, msgs)
	if before < 30000 {
		t.Fatalf("the conversation is %d tokens; the test wants some 40k", before)
	}
	res, err := fit.Fit(msgs, fit.Options{Window: 8000, Reserve: 500, Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	out, rep := res.Messages, res.Report
	got := wireTokens(t, c, out)
	t.Logf("%d → %d tokens, %d messages left out; %s", before, got, rep.Dropped, rep.Reasons)
	if got > 7500 || got != rep.Tokens {
		t.Fatalf("fitted request is %d tokens (report says %d), want ≤ 7500 and equal", got, rep.Tokens)
	}
	if got < 7500*6/10 {
		t.Errorf("fitted request is %d tokens: more was dropped than a step", got)
	}
	if before != rep.Before {
		t.Errorf("Before = %d, the wire form counts %d", rep.Before, before)
	}
	// The system message, the note, then the newest history whole and in
	// order up to the current message.
	if out[0].Content.Text != msgs[0].Content.Text {
		t.Errorf("system message changed")
	}
	note := out[1].Content.Text
	if out[1].Role != messages.RoleUser || !strings.Contains(note, fmt.Sprintf("[loom: %d earlier messages", rep.Dropped)) {
		t.Errorf("no note after the system message: %q", note)
	}
	kept := out[2:]
	if len(kept) != len(msgs)-1-rep.Dropped {
		t.Fatalf("%d messages kept after the note, want %d", len(kept), len(msgs)-1-rep.Dropped)
	}
	for i, m := range kept {
		want := msgs[1+rep.Dropped+i]
		a, _ := json.Marshal(m)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Fatalf("kept message %d differs from the original's message %d:\n%s\n%s", i, 1+rep.Dropped+i, a, b)
		}
	}
	if kept[0].Role != messages.RoleUser {
		t.Errorf("the kept history starts with a %s message, not a whole unit", kept[0].Role)
	}
	checkPairs(t, out)
	if rep.Dropped%4 != 0 || rep.Units != rep.Dropped/4 {
		t.Errorf("dropped %d messages in %d units; each turn here is a unit of 4", rep.Dropped, rep.Units)
	}
}

// TestFitSharesPrefixAcrossTurns plays 20 turns of a long conversation
// and checks that consecutive fitted requests share their prefix except
// when a step drops more: the provider's cache keeps hitting.
func TestFitSharesPrefixAcrossTurns(t *testing.T) {
	c := counter(t)
	run := func(step float64) (breaks int, shared []int) {
		hist := fittest.Conversation(60, 300)
		var prev []messages.Message
		for turn := range 20 {
			msgs := append([]messages.Message{system("You are a careful research assistant.")}, hist...)
			msgs = append(msgs, user(fmt.Sprintf("turn %d: go on", turn)))
			res, err := fit.Fit(msgs, fit.Options{Window: 8000, Reserve: 500, Counter: c, Step: step})
			if err != nil {
				t.Fatal(err)
			}
			if res.Report.Tokens > 7500 {
				t.Fatalf("turn %d: %d tokens", turn, res.Report.Tokens)
			}
			out := res.Messages
			if prev != nil {
				// The previous request less its current message must start
				// this one, byte for byte.
				n := len(prev) - 1
				same := n <= len(out)
				for i := 0; same && i < n; i++ {
					a, _ := json.Marshal(prev[i])
					b, _ := json.Marshal(out[i])
					same = string(a) == string(b)
				}
				if same {
					shared = append(shared, wireTokens(t, c, prev[:n]))
				} else {
					breaks++
				}
			}
			prev = out
			// The client's next turn: the reply and a tool round.
			hist = append(msgs[1:], fittest.Conversation(1, 300)...)
			hist[len(hist)-4].Content = messages.TextContent(fmt.Sprintf("question %d: %s", 60+turn, fittest.Filler(turn, 75)))
		}
		return breaks, shared
	}
	breaks, shared := run(0)
	t.Logf("steps of 20%%: %d prefix breaks in 19 turn changes; shared prefixes (tokens): %v", breaks, shared)
	// A turn adds some 400 tokens and a step is 1,500 (a fifth of 7,500):
	// the prefix may break once in every three or four turns, no more.
	perTurn := wireTokens(t, c, fittest.Conversation(1, 300)) - 3
	if limit := 19*perTurn/1500 + 1; breaks > limit {
		t.Errorf("%d of 19 consecutive turns broke the prefix; a turn adds %d tokens, so steps of 1,500 allow %d", breaks, perTurn, limit)
	}
	for _, n := range shared {
		if n < 1000 {
			t.Errorf("a shared prefix of %d tokens is below what a provider caches", n)
		}
	}
	// The floor: dropping only what is needed breaks nearly every turn.
	tight, _ := run(0.0001)
	t.Logf("dropping only what is needed: %d prefix breaks in 19", tight)
	if tight <= breaks {
		t.Errorf("steps broke the prefix %d times, the tight fit %d: steps should do better", breaks, tight)
	}
}

func TestFitNoteCarriesLatestSummaries(t *testing.T) {
	c := counter(t)
	msgs := append([]messages.Message{system("sys")}, fittest.Conversation(60, 300)...)
	msgs = append(msgs, user("go on"))
	entries := []string{"[2026-01-01 10:00] Old entry " + fittest.Filler(1, 600), "[2026-01-02 10:00] Searched the archive for amber.", "[2026-01-03 10:00] Compared quartz and cobalt prices."}
	res, err := fit.Fit(msgs, fit.Options{Window: 8000, Reserve: 500, Counter: c, Summaries: func() []string { return entries }, NoteBudget: 200})
	if err != nil {
		t.Fatal(err)
	}
	note := res.Messages[1].Content.Text
	if res.Report.Summaries != 2 || !strings.Contains(note, entries[1]) || !strings.Contains(note, entries[2]) || strings.Contains(note, "Old entry") {
		t.Errorf("note should hold the two latest entries, not the long old one (over the 200-token budget):\n%s", note)
	}
	if strings.Index(note, entries[1]) > strings.Index(note, entries[2]) {
		t.Errorf("entries out of order:\n%s", note)
	}
	if got := wireTokens(t, c, res.Messages); got > 7500 {
		t.Errorf("%d tokens with the note", got)
	}
}

func TestFitShrinksSystemThenNoteThenCuts(t *testing.T) {
	c := counter(t)
	big := fittest.Filler(3, 6000) // some 6,000 tokens
	msgs := []messages.Message{system(big)}
	msgs = append(msgs, fittest.Conversation(4, 200)...)
	msgs = append(msgs, user("question: "+fittest.Filler(4, 3000)))
	var asked int
	res, err := fit.Fit(msgs, fit.Options{Window: 8000, Reserve: 500, Counter: c,
		ShrinkSystem: func(room int) (string, []messages.Section, error) {
			asked = room
			return fittest.Filler(3, 2000), nil, nil // the render's budget dropped memories and skills
		}})
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report
	t.Logf("%+v", rep)
	if asked <= 0 || rep.SystemRoom != asked {
		t.Errorf("ShrinkSystem asked for %d tokens, report says %d", asked, rep.SystemRoom)
	}
	if got := wireTokens(t, c, res.Messages); got > 7500 || got != rep.Tokens {
		t.Errorf("%d tokens (report %d), want ≤ 7500", got, rep.Tokens)
	}
	if res.Messages[0].Content.Text != fittest.Filler(3, 2000) || rep.Dropped != 16 {
		t.Errorf("want the shrunk system prompt and all 16 history messages gone; dropped %d", rep.Dropped)
	}
	if msgs[0].Content.Text != big {
		t.Errorf("Fit changed its input")
	}

	// A system prompt that cannot shrink: the note goes, then the current
	// message is cut in its middle.
	res, err = fit.Fit(msgs, fit.Options{Window: 8000, Reserve: 500, Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	rep = res.Report
	last := res.Messages[len(res.Messages)-1].Content.Text
	if rep.Note || rep.Cut != 1 || !strings.Contains(last, "characters cut by loom from the middle of this message") {
		t.Errorf("want no note and the current message cut: %+v", rep)
	}
	if !strings.HasPrefix(last, "question: ") || !strings.HasSuffix(last, fittest.Filler(4, 3000)[len(fittest.Filler(4, 3000))-40:]) {
		t.Errorf("the cut message lost its head or its tail")
	}
	if got := wireTokens(t, c, res.Messages); got > 7500 || got != rep.Tokens || rep.Over != 0 {
		t.Errorf("%d tokens (report %d, over %d), want ≤ 7500", got, rep.Tokens, rep.Over)
	}
	if len(res.Messages) != 2 {
		t.Errorf("%d messages, want the system prompt and the current message", len(res.Messages))
	}
}

func TestFitToolsTooLarge(t *testing.T) {
	c := counter(t)
	msgs := []messages.Message{system("sys"), user("hi")}
	res, err := fit.Fit(msgs, fit.Options{Window: 8000, Reserve: 500, Counter: c, Tools: 9000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Over <= 0 || len(res.Report.Reasons) == 0 {
		t.Errorf("tool definitions over the window should be reported over: %+v", res.Report)
	}
}

func TestFitWithoutWindowCounts(t *testing.T) {
	c := counter(t)
	msgs := append([]messages.Message{system("sys")}, fittest.Conversation(60, 300)...)
	msgs = append(msgs, user("go on"))
	res, err := fit.Fit(msgs, fit.Options{Counter: c, Tools: 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != len(msgs) || res.Report.Changed() || res.Report.Tokens != wireTokens(t, c, msgs)+40 {
		t.Errorf("without a window: %d messages, report %+v, want %d tokens", len(res.Messages), res.Report, wireTokens(t, c, msgs)+40)
	}
}

func TestFitNoRoom(t *testing.T) {
	_, err := fit.Fit([]messages.Message{user("hi")}, fit.Options{Window: 8000, Reserve: 8000, Counter: counter(t)})
	if !errors.Is(err, fit.ErrNoRoom) {
		t.Errorf("err = %v, want ErrNoRoom", err)
	}
}

func TestFitHistoryOpeningWithAssistant(t *testing.T) {
	c := counter(t)
	hist := fittest.Conversation(40, 300)[3:] // starts with the answer of turn 0
	msgs := append([]messages.Message{system("sys")}, hist...)
	msgs = append(msgs, user("next"))
	res, err := fit.Fit(msgs, fit.Options{Window: 8000, Reserve: 500, Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages[2].Role != messages.RoleUser {
		t.Errorf("kept history starts with %s", res.Messages[2].Role)
	}
	checkPairs(t, res.Messages)
}

func TestKnownWindow(t *testing.T) {
	for model, want := range map[string]int{
		"gpt-4o": 128000, "gpt-4o-mini": 128000, "openai/gpt-4o-2024-08-06": 128000,
		"gpt-4.1-nano": 1047576, "gpt-4": 8192, "gpt-4-turbo": 128000, "o1-mini": 128000, "o3-mini": 200000,
		"claude-sonnet-4-5-20250929": 200000, "claude-3-5-haiku-latest": 200000, "GPT-4O": 128000,
		"gpt-4o1": 0, "llama3": 0, "": 0,
	} {
		if got := fit.KnownWindow(model); got != want {
			t.Errorf("KnownWindow(%q) = %d, want %d", model, got, want)
		}
	}
}
