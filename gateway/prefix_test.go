package gateway

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
)

// The report the gateway completes from its kept system prompt is the one
// messages.Build makes for the whole turn: same prefix hash, section
// hashes, token counts and warnings, for each client-system mode and for
// histories with tool calls, timestamps, extra keys and a merged turn.
func TestPrefixReportMatchesBuild(t *testing.T) {
	body := "# Agent\n\nBe brief. \"Quotes\" and <html> & unicode é \u2028 stay.\n\n# Memory\n\nThe user likes tea.\n"
	agentEnd := strings.Index(body, "# Memory")
	res := &prompt.Result{Prompt: body}
	res.Report.SetSections([]md.Entry{
		{Name: "agents", Start: 0, End: agentEnd},
		{Name: "user memory", Start: agentEnd, End: len(body)},
		{Name: "nested", Start: -1, End: -1},
	})
	counter, err := tokens.Get(tokens.Default)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	histories := map[string][]messages.Message{
		"none": nil,
		"tools": {
			{Role: messages.RoleUser, Content: messages.TextContent("weather?"), Time: at},
			{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{messages.NewToolCall("c1", "weather", `{"city":"Oslo"}`)}},
			messages.Message{Role: messages.RoleTool, Content: messages.TextContent(`{"t":21}`)}.WithToolCallID("c1").WithExtra(map[string]json.RawMessage{"x": json.RawMessage(`1`)}),
			{Role: messages.RoleAssistant, Content: messages.TextContent("21 degrees")},
		},
		"merged": {
			{Role: messages.RoleUser, Content: messages.TextContent("first")},
			{Role: messages.RoleAssistant, Content: messages.TextContent("ok")},
			{Role: messages.RoleUser, Content: messages.TextContent("and then")},
		},
	}
	g := &Gateway{}
	for _, mode := range []string{config.ClientSystemAppend, config.ClientSystemReplace, config.ClientSystemIgnore} {
		for _, client := range []string{"", "CLIENT rules"} {
			for name, hist := range histories {
				for _, c := range []messages.Counter{nil, counter} {
					sys, err := g.systemFor(res, client, mode, c)
					if err != nil {
						t.Fatal(err)
					}
					rt := messages.Runtime{Now: at, Location: time.UTC}
					opts := messages.Options{Counter: c}
					want, err := messages.Build(messages.Turn{System: sys.system, SystemSections: sys.sections, History: hist, Message: "now", Runtime: rt}, opts)
					if err != nil {
						t.Fatal(err)
					}
					got, err := messages.Build(messages.Turn{History: hist, Message: "now", Runtime: rt}, opts)
					if err != nil {
						t.Fatal(err)
					}
					if err := sys.completeReport(&got.Report, hist, opts); err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got.Report, want.Report) {
						t.Errorf("%s/%q/%s/counter %v:\n got %+v\nwant %+v", mode, client, name, c != nil, got.Report, want.Report)
					}
					wantSys := res.Prompt
					switch {
					case client != "" && mode == config.ClientSystemReplace:
						wantSys = client + "\n\nThe user likes tea." // only memory is added
						wantSys = strings.Replace(wantSys, "The user likes tea.", "# Memory\n\nThe user likes tea.", 1)
					case client != "" && mode == config.ClientSystemAppend:
						wantSys = res.Prompt + "\n\n## Client instructions\n\n" + client
					}
					if sys.system != wantSys {
						t.Errorf("%s/%q: system %q", mode, client, sys.system)
					}
				}
			}
		}
	}
}
