package prompt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// incrementalWorkspace has every kind of part the assistant renders:
// bootstrap files, a long-term memory file, structured memories, an
// always-on skill and a summary of many skills.
func incrementalWorkspace(t *testing.T) string {
	files := map[string]string{
		"AGENTS.md":        "# Agents\n\nBe terse.\n  Indented line.\n",
		"SOUL.md":          "# Soul\n\nCurious, careful.\n",
		"USER.md":          "# User\n\nLikes tables.\n",
		"TOOLS.md":         "# Tools\n\nUse the shell.\n",
		"memory/MEMORY.md": "# Long-term\n\n- The user is in Lisbon.\n",
		"skills/always/SKILL.md": "---\nname: always\ndescription: Always on.\nalways: true\n---\n" +
			"Check the date first.\n",
	}
	for i := range 30 {
		name := fmt.Sprintf("skill%02d", i)
		files["skills/"+name+"/SKILL.md"] = fmt.Sprintf("---\nname: %s\ndescription: Does thing %d, carefully.\n---\n\nBody %d.\n", name, i, i)
	}
	dir := write(t, files)
	store, err := memory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if _, err := store.Add(context.Background(), memory.NewMemory{Category: "global_rule", Content: fmt.Sprintf("Rule number %d holds.", i)}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	return dir
}

// sections maps each top-level section of a render to its bytes.
func sections(t *testing.T, res *prompt.Result) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range res.Report.Sections() {
		if e.Start >= 0 && e.End > e.Start {
			out[e.Name] = res.Prompt[e.Start:e.End]
		}
	}
	if len(out) < 4 {
		t.Fatalf("too few located sections: %v", out)
	}
	return out
}

// firstStart is where the first of the named sections starts.
func firstStart(res *prompt.Result, names ...string) int {
	at := len(res.Prompt)
	for _, e := range res.Report.Sections() {
		for _, n := range names {
			if e.Name == n && e.Start >= 0 {
				at = min(at, e.Start)
			}
		}
	}
	return at
}

// A render after one file changed equals a render from scratch; every
// section that does not depend on the file is byte for byte what it was, so
// the prompt up to the changed section is the same prefix as before (what a
// model provider's prompt cache keys on). Checked with and without a watch,
// for a skill and a bootstrap file.
func TestIncrementalRenderEqualsFreshAndKeepsOtherSections(t *testing.T) {
	for _, watch := range []bool{true, false} {
		for _, edit := range []struct {
			file     string
			text     string
			changed  []string // sections that may change
			showsAs  string
			fromHere []string // the prefix before the first of these is kept
		}{
			{"skills/skill17/SKILL.md", "---\nname: skill17\ndescription: Now does something else.\n---\n\nBody.\n",
				[]string{"skills", "skill:skill17"}, "Now does something else.", []string{"skills"}},
			{"SOUL.md", "# Soul\n\nBolder now.\n", []string{"bootstrap", "soul"}, "Bolder now.", []string{"bootstrap", "soul"}},
			{"skills/always/SKILL.md", "---\nname: always\ndescription: Always on.\nalways: true\n---\nCheck the time too.\n",
				[]string{"active_skills", "active-skills", "active-skill:always"}, "Check the time too.", []string{"active_skills"}},
		} {
			t.Run(fmt.Sprintf("watch=%v/%s", watch, edit.file), func(t *testing.T) {
				dir := incrementalWorkspace(t)
				ws, err := workspace.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				if watch {
					if err := ws.Watch(); err != nil {
						t.Fatal(err)
					}
					defer ws.Close()
				}
				b := prompt.New(ws)
				defer b.Close()
				opts := prompt.Options{GOOS: "linux", GOARCH: "amd64"}
				before, err := b.Render(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(edit.file)), []byte(edit.text), 0o644); err != nil {
					t.Fatal(err)
				}
				var after *prompt.Result
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					if after, err = b.Render(context.Background(), opts); err != nil {
						t.Fatal(err)
					}
					if strings.Contains(after.Prompt, edit.showsAs) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the edit never reached the prompt")
					}
				}
				fresh := render(t, dir, opts)
				if after.Prompt != fresh.Prompt {
					t.Fatalf("incremental render differs from a fresh one:\n%s\n----\n%s", after.Prompt, fresh.Prompt)
				}
				if !sameReport(after.Report, fresh.Report) {
					t.Fatalf("incremental report differs from a fresh one:\n%+v\n%+v", after.Report.Sections(), fresh.Report.Sections())
				}
				was, now := sections(t, before), sections(t, after)
				for name, text := range was {
					if contains(edit.changed, name) {
						continue
					}
					if now[name] != text {
						t.Errorf("section %q changed though the edit did not touch it", name)
					}
				}
				cut := firstStart(before, edit.fromHere...)
				if cut == 0 || cut > len(after.Prompt) || after.Prompt[:cut] != before.Prompt[:cut] {
					t.Errorf("the prefix before %v (%d bytes) changed", edit.fromHere, cut)
				}
				changed := 0
				for _, n := range edit.changed {
					if was[n] != now[n] {
						changed++
					}
				}
				if changed == 0 {
					t.Errorf("none of %v changed", edit.changed)
				}
			})
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// One builder follows a run of edits of every kind (a skill edited, added,
// removed; a bootstrap file edited, emptied and written again; a memory
// added; the long-term memory file edited), rendering after each; every
// render equals a render from scratch, text and report. With and without a
// watch.
func TestIncrementalRenderAfterEachKindOfEdit(t *testing.T) {
	for _, watch := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			dir := incrementalWorkspace(t)
			ws, err := workspace.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if watch {
				if err := ws.Watch(); err != nil {
					t.Fatal(err)
				}
				defer ws.Close()
			}
			b := prompt.New(ws)
			defer b.Close()
			opts := prompt.Options{GOOS: "linux", GOARCH: "amd64"}
			if _, err := b.Render(context.Background(), opts); err != nil {
				t.Fatal(err)
			}
			put := func(rel, text string) func() {
				return func() {
					p := filepath.Join(dir, filepath.FromSlash(rel))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			skill := func(name, desc string) string {
				return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\nBody.\n", name, desc)
			}
			for _, step := range []struct {
				name    string
				do      func()
				showsAs string // in the prompt once the edit is seen
				goneAs  string // no longer in the prompt once it is seen
			}{
				{"skill edited", put("skills/skill05/SKILL.md", skill("skill05", "Edited five.")), "Edited five.", "Does thing 5,"},
				{"skill edited again", put("skills/skill05/SKILL.md", skill("skill05", "Edited five, twice.")), "Edited five, twice.", ""},
				{"skill added", put("skills/aaa-new/SKILL.md", skill("aaa-new", "A new first skill.")), "A new first skill.", ""},
				{"skill added last", put("skills/zzz-new/SKILL.md", skill("zzz-new", "A new last skill.")), "A new last skill.", ""},
				{"skill removed", func() {
					if err := os.RemoveAll(filepath.Join(dir, "skills", "skill11")); err != nil {
						t.Fatal(err)
					}
				}, "", "Does thing 11,"},
				{"skill made unavailable", put("skills/skill20/SKILL.md", "---\nname: skill20\ndescription: Needs a tool.\nmetadata: {\"nanobot\": {\"requires\": {\"bins\": [\"no-such-program-xyz\"]}}}\n---\n\nBody.\n"), "no-such-program-xyz", ""},
				{"bootstrap edited", put("SOUL.md", "# Soul\n\nBolder now.\n"), "Bolder now.", "Curious, careful."},
				{"bootstrap emptied", put("USER.md", ""), "", "Likes tables."},
				{"bootstrap written again", put("USER.md", "# User\n\nLikes charts.\n"), "Likes charts.", ""},
				{"bootstrap section disabled", put("loom.yaml", "disable:\n  - soul\n"), "", "Bolder now."},
				{"bootstrap section capped", put("loom.yaml", "budget:\n  sections:\n    user: 3\n"), "Bolder now.", "Likes charts."},
				{"bootstrap settings back", put("loom.yaml", "preset: assistant\n"), "Likes charts.", ""},
				{"memory added", func() {
					store, err := memory.Open(dir)
					if err != nil {
						t.Fatal(err)
					}
					defer store.Close()
					if _, err := store.Add(context.Background(), memory.NewMemory{Category: "global_rule", Content: "A brand new rule."}); err != nil {
						t.Fatal(err)
					}
					b.Invalidate()
				}, "A brand new rule.", ""},
				{"memory file edited", put("memory/MEMORY.md", "# Long-term\n\n- The user moved to Porto.\n"), "moved to Porto", "in Lisbon"},
			} {
				step.do()
				var got *prompt.Result
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					if got, err = b.Render(context.Background(), opts); err != nil {
						t.Fatal(err)
					}
					if (step.showsAs == "" || strings.Contains(got.Prompt, step.showsAs)) && (step.goneAs == "" || !strings.Contains(got.Prompt, step.goneAs)) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: the edit never reached the prompt", step.name)
					}
				}
				fresh := render(t, dir, opts)
				if got.Prompt != fresh.Prompt {
					t.Fatalf("%s: incremental render differs from a fresh one:\n%s\n----\n%s", step.name, got.Prompt, fresh.Prompt)
				}
				if !sameReport(got.Report, fresh.Report) {
					t.Fatalf("%s: incremental report differs from a fresh one:\n%+v\n%+v", step.name, got.Report.Sections(), fresh.Report.Sections())
				}
			}
		})
	}
}

// sameReport reports whether two reports say the same, lines included.
func sameReport(a, b prompt.Report) bool {
	return a.Encoding == b.Encoding && a.Tokens == b.Tokens && reflect.DeepEqual(a.Budget, b.Budget) &&
		a.Preset == b.Preset && reflect.DeepEqual(a.Diagnostics, b.Diagnostics) && reflect.DeepEqual(a.Sections(), b.Sections())
}

// Without a budget the skills catalogue is not wrapped in the scope a
// budget needs for its notice; the prompt and every count are the same as
// with a budget that drops nothing.
func TestUnbudgetedSummaryMatchesBudgeted(t *testing.T) {
	dir := incrementalWorkspace(t)
	opts := prompt.Options{GOOS: "linux", GOARCH: "amd64"}
	plain := render(t, dir, opts)
	opts.Budget = 1_000_000
	budgeted := render(t, dir, opts)
	if plain.Prompt != budgeted.Prompt {
		t.Fatalf("the prompt differs with a budget that drops nothing:\n%s\n----\n%s", plain.Prompt, budgeted.Prompt)
	}
	if plain.Report.Tokens != budgeted.Report.Tokens {
		t.Fatalf("tokens %d without a budget, %d with one", plain.Report.Tokens, budgeted.Report.Tokens)
	}
	counts := map[string]int{}
	for _, e := range budgeted.Report.Sections() {
		counts[e.Name] = e.Tokens
	}
	n := 0
	for _, e := range plain.Report.Sections() {
		if strings.HasPrefix(e.Name, "skill") {
			n++
			if counts[e.Name] != e.Tokens {
				t.Errorf("%s: %d tokens without a budget, %d with one", e.Name, e.Tokens, counts[e.Name])
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d skill entries in the report", n)
	}
}
