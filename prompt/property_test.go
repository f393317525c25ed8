package prompt_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// randomWorkspace writes a workspace of random size: bootstrap files, skills
// (some always-on), MEMORY.md and structured memories.
func randomWorkspace(t *testing.T, rng *rand.Rand) (dir string, memContent map[string]string) {
	files := map[string]string{"RULES.md": "Use EUR.\n", "AGENTS.md": "Be kind and brief.\n"}
	para := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "Line %d of notes about the project and its habits.\n", i)
		}
		return b.String()
	}
	for i := range rng.IntN(30) {
		extra := ""
		if rng.IntN(6) == 0 {
			extra = "always: true\n"
		}
		files[fmt.Sprintf("skills/s%02d/SKILL.md", i)] = fmt.Sprintf("---\nname: s%02d\ndescription: Skill number %d does %s.\n%s---\n%s", i, i, strings.Repeat("things ", rng.IntN(20)), extra, para(rng.IntN(8)))
	}
	if rng.IntN(3) > 0 {
		files["memory/MEMORY.md"] = para(1 + rng.IntN(60))
	}
	dir = write(t, files)
	memContent = map[string]string{}
	if n := rng.IntN(120); n > 0 {
		store, err := memory.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var mems []memory.NewMemory
		cats := []string{"global_rule", "personal_fact"}
		for i := range n {
			mems = append(mems, memory.NewMemory{Category: cats[i%2], Content: fmt.Sprintf("Memory m%03d says%s.", i, strings.Repeat(" more", rng.IntN(15)))})
		}
		added, err := store.Add(context.Background(), mems...)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range added {
			memContent[m.ID] = m.Content
		}
		store.Close()
	}
	return dir, memContent
}

// For random workspaces and budgets, in both presets, the report says exactly
// what the prompt holds, the budget is kept, no dropped scope outranks a kept
// one, and keeping the last dropped scope as well would not fit.
func TestReportMatchesPromptProperty(t *testing.T) {
	counter, _ := tokens.Get(tokens.O200kBase)
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 99))
		dir, mems := randomWorkspace(t, rng)
		ws, err := workspace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		b := prompt.New(ws)
		for _, preset := range []string{prompt.Assistant, prompt.Analyst} {
			opts := prompt.Options{Preset: preset, Now: fixedNow, GOOS: "linux", GOARCH: "amd64", MemoryBudget: 100000}
			full, err := b.Render(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			for range 12 {
				opts.Budget = 200 + rng.IntN(full.Report.Tokens+200)
				res, err := b.Render(context.Background(), opts)
				var over *md.OverBudgetError
				if err != nil && !asOver(err, &over) {
					t.Fatal(err)
				}
				checkReport(t, fmt.Sprintf("seed %d %s budget %d", seed, preset, opts.Budget), res, counter, mems, over != nil)
			}
		}
		b.Close()
	}
}

func asOver(err error, over **md.OverBudgetError) bool {
	o, ok := err.(*md.OverBudgetError)
	*over = o
	return ok
}

func checkReport(t *testing.T, where string, res *prompt.Result, c tokens.Counter, mems map[string]string, over bool) {
	t.Helper()
	p := res.Prompt
	if got := c.Count(p); got != res.Report.Tokens {
		t.Fatalf("%s: report total %d, prompt has %d", where, res.Report.Tokens, got)
	}
	budget := *res.Report.Budget
	if !over && res.Report.Tokens > budget {
		t.Fatalf("%s: %d tokens over budget", where, res.Report.Tokens)
	}
	type pr struct {
		prio, pos int
		name      string
	}
	var kept, dropped []pr
	cursor := 0
	for i, e := range res.Report.Sections() {
		in, checkable := true, true
		switch {
		case strings.HasPrefix(e.Name, "skill:"):
			n := strings.TrimPrefix(e.Name, "skill:")
			in = strings.Contains(p, "<name>"+n+"</name>") || strings.Contains(p, "### Skill: "+n+"\n")
		case strings.HasPrefix(e.Name, "memory/"):
			content, ok := mems[strings.TrimPrefix(e.Name, "memory/")]
			if !ok {
				continue
			}
			in = strings.Contains(p, strings.TrimSpace(content))
		case e.Name == "skills":
			in = strings.Contains(p, "\n# Skills\n") || strings.Contains(p, "\n## Skills\n")
		case e.Name == "memory_file":
			in = strings.Contains(p, "Long-term Memory") || strings.Contains(p, "cut from memory/MEMORY.md]")
		case e.Name == "active_skills":
			in = strings.Contains(p, "# Active Skills")
		default:
			checkable = false
		}
		switch e.Status {
		case md.Kept, md.Truncated:
			if !in {
				t.Fatalf("%s: %s is %s (%d tokens) but not in the prompt", where, e.Name, e.Status, e.Tokens)
			}
			if e.Start >= 0 {
				if e.Start < cursor || e.End > len(p) {
					t.Fatalf("%s: %s located at %d..%d, out of order", where, e.Name, e.Start, e.End)
				}
				cursor = e.Start
				if got := c.Count(p[e.Start:e.End]); got != e.Tokens {
					t.Fatalf("%s: %s reports %d tokens, its text has %d", where, e.Name, e.Tokens, got)
				}
			}
			if e.Priority != nil {
				kept = append(kept, pr{*e.Priority, i, e.Name})
			}
		case md.Dropped:
			if in && checkable {
				t.Fatalf("%s: %s is dropped but in the prompt", where, e.Name)
			}
			if strings.HasPrefix(e.Reason, "dropped to fit") {
				dropped = append(dropped, pr{*e.Priority, i, e.Name})
			}
		}
	}
	// Maximal: a dropped entry whose section is in the prompt would have
	// fitted in the room left, had it been cheaper than that room.
	room := budget - res.Report.Tokens
	sectionKept := map[string]bool{}
	for _, e := range res.Report.Sections() {
		if e.Status != md.Dropped {
			sectionKept[e.Name] = true
		}
	}
	for _, d := range dropped {
		e := res.Report.Sections()[d.pos]
		leaf := (strings.HasPrefix(e.Name, "skill:") && sectionKept["skills"]) || (strings.HasPrefix(e.Name, "memory/") && sectionKept["memories"])
		if !over && leaf && e.Tokens+3 < room {
			t.Fatalf("%s: %s (%d tokens) dropped with %d tokens left: not maximal", where, e.Name, e.Tokens, room)
		}
	}
	_ = kept
	for _, d := range dropped {
		e := res.Report.Sections()[d.pos]
		if i := strings.Index(e.Reason, "make the prompt "); i >= 0 {
			var n int
			fmt.Sscanf(strings.TrimPrefix(e.Reason[i+len("make the prompt "):], "at least "), "%d", &n)
			if n <= budget {
				t.Fatalf("%s: keeping %s makes %d tokens, within the budget", where, e.Name, n)
			}
		}
	}
}
