package messages

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

// loom.yaml runtime.placement places the runtime block as it does for the
// server, the gateway and chat (session.RuntimeFromConfig); --placement
// still wins.
func TestPlacementFromLoomYAML(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, ws, "AGENTS.md", "# Agent\nBe brief.\n")
	writeFile(t, ws, "loom.yaml", "runtime:\n  placement: before\n")
	last := func(args ...string) string {
		t.Helper()
		ios, _, out, _ := cmdutil.Test()
		cmd := NewCmdMessages(ios, nil)
		cmd.SetArgs(append([]string{"-w", ws, "--message", "TEXT-7q", "--now", "2026-03-01T10:15:00Z"}, args...))
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		var msgs []struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(out.Bytes(), &msgs); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return msgs[len(msgs)-1].Content
	}
	if got := last(); !strings.HasSuffix(got, "TEXT-7q") || got == "TEXT-7q" {
		t.Errorf("loom.yaml placement before: the runtime block is not before the text:\n%s", got)
	}
	if got := last("--placement", "after"); !strings.HasPrefix(got, "TEXT-7q") || got == "TEXT-7q" {
		t.Errorf("--placement after: the runtime block is not after the text:\n%s", got)
	}
}
