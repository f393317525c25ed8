package chat

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
)

// TestFigures50Turns runs a scripted 50-turn conversation against the fake
// endpoint and logs, per kind of call, how many requests were made and the
// tokens they cost (cl100k_base counts of what was sent; cached tokens
// simulated on shared message prefixes). Run with -v to see the table.
func TestFigures50Turns(t *testing.T) {
	for _, format := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(format, func(t *testing.T) {
			s := fake(t, format)
			base := s.Default
			s.Default = func(r llmtest.Request) llmtest.Reply {
				rep := base(r)
				if r.Kind == "chat" {
					rep.Text += " " + strings.Repeat("The churn analysis shows a steady decline across regions. ", 6)
				}
				return rep
			}
			// A system prompt of about 1,500 tokens, the size of a small
			// workspace's rendered prompt.
			system := strings.Repeat("Follow the workspace rules: answer briefly, cite the file you used, and ask before running anything that writes.\n", 70)
			var in strings.Builder
			for i := range 50 {
				switch {
				case i == 3:
					in.WriteString("My name is Ana and I lead the data team at Acme.\n")
				case i%10 == 7:
					in.WriteString("From now on, always show numbers with two decimals.\n")
				case i%5 == 4:
					in.WriteString("ok\n")
				default:
					fmt.Fprintf(&in, "Question %d: how did churn in region %d move last quarter, and what drove it?\n", i, i%7)
				}
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte(system), 0o644)
			r := runChat(t, s, dir, in.String(), func(o *ChatOptions, c *Config) {
				c.ConsolidateThreshold = 4000
				c.ConsolidateKeep = 2000
			})
			if r.err != nil {
				t.Fatal(r.err)
			}
			type agg struct {
				n     int
				usage llm.Usage
			}
			kinds := map[string]*agg{}
			for _, q := range s.Requests() {
				a := kinds[q.Kind]
				if a == nil {
					a = &agg{}
					kinds[q.Kind] = a
				}
				a.n++
				a.usage = a.usage.Add(q.Usage)
			}
			if kinds["chat"] == nil || kinds["chat"].n != 50 {
				t.Fatalf("chat requests: %+v", kinds["chat"])
			}
			names := make([]string, 0, len(kinds))
			for k := range kinds {
				names = append(names, k)
			}
			sort.Strings(names)
			var b strings.Builder
			fmt.Fprintf(&b, "%s, 50 turns, %d requests (%.2f per turn)\n", format, len(s.Requests()), float64(len(s.Requests()))/50)
			fmt.Fprintf(&b, "%-12s %5s %10s %10s %10s %12s %12s\n", "kind", "calls", "in total", "in/call", "out/call", "cached", "cached %")
			for _, k := range names {
				a := kinds[k]
				pct := 0.0
				if a.usage.InputTokens > 0 {
					pct = 100 * float64(a.usage.CachedTokens) / float64(a.usage.InputTokens)
				}
				fmt.Fprintf(&b, "%-12s %5d %10d %10d %10d %12d %11.1f%%\n", k, a.n, a.usage.InputTokens,
					a.usage.InputTokens/a.n, a.usage.OutputTokens/a.n, a.usage.CachedTokens, pct)
			}
			t.Log("\n" + b.String())
		})
	}
}
