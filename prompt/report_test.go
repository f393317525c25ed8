package prompt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// A report encodes to the bytes a plain struct of its fields would (the
// shape `loom render --format json` has always printed), under both HTML
// escaping settings, and reads back to the same JSON.
func TestReportJSONIsThePlainShape(t *testing.T) {
	dir := write(t, map[string]string{
		"AGENTS.md":           "Be <kind> & brief.\n",
		"skills/a&b/SKILL.md": "---\nname: a-b\ndescription: Does <things> & more.\n---\nBody.\n",
		"memory/MEMORY.md":    "The user likes tea & <cake>.\n",
	})
	res, err := prompt.Render(context.Background(), dir, prompt.Options{Budget: 60})
	if err != nil && res == nil {
		t.Fatal(err)
	}
	plain := struct {
		Encoding    string                 `json:"encoding"`
		Tokens      int                    `json:"tokens"`
		Budget      *int                   `json:"budget"`
		Preset      string                 `json:"preset"`
		Sections    []md.Entry             `json:"sections"`
		Diagnostics []workspace.Diagnostic `json:"diagnostics"`
	}{res.Report.Encoding, res.Report.Tokens, res.Report.Budget, res.Report.Preset, res.Report.Sections(), res.Report.Diagnostics}
	if len(plain.Sections) < 2 {
		t.Fatalf("too few sections to test: %+v", plain.Sections)
	}
	for _, escape := range []bool{true, false} {
		encode := func(v any) []byte {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(escape)
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		got, want := encode(res.Report), encode(plain)
		if !bytes.Equal(got, want) {
			t.Fatalf("escape %v:\n got %s\nwant %s", escape, got, want)
		}
		var back prompt.Report
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if again := encode(back); !bytes.Equal(again, got) {
			t.Fatalf("round trip:\n got %s\nwant %s", again, got)
		}
	}
}
