package prompt_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/loomctx/loom/prompt"
)

// A repeated {{ default_prompt }} must not multiply the output.
func TestRepeatedDefaultPromptIsPlacedOnce(t *testing.T) {
	override := strings.Repeat("{{ default_prompt }}\n", 200)
	dir := write(t, map[string]string{"RULES.md": "Use EUR.\n", "agent/prompts/system.md": override})
	res := render(t, dir, prompt.Options{})
	one := render(t, write(t, map[string]string{"RULES.md": "Use EUR.\n"}), prompt.Options{})
	if len(res.Prompt) > len(one.Prompt)+len(override) {
		t.Errorf("override of %d bytes made a prompt of %d bytes (default alone: %d)", len(override), len(res.Prompt), len(one.Prompt))
	}
}

func TestNearMissPlaceholderWarns(t *testing.T) {
	for _, tc := range []struct{ text, meant string }{
		{"Intro {{ NAO_PROMPT }}", "{{ nao_prompt }}"},
		{"Intro {{default prompt}}", "{{ default_prompt }}"},
		{"Intro\n{{ Section: skills}}", "{{ section:skills }}"},
		{"Intro {{ Default_Prompt }}", "{{ default_prompt }}"},
	} {
		dir := write(t, map[string]string{"RULES.md": "x\n", "agent/prompts/system.md": tc.text})
		res := render(t, dir, prompt.Options{})
		if !hasDiag(res, "agent/prompts/system.md", tc.meant) {
			t.Errorf("%q: no warning naming %s: %v", tc.text, tc.meant, res.Report.Diagnostics)
		}
	}
	// Exact placeholders and unrelated braces say nothing.
	dir := write(t, map[string]string{"RULES.md": "x\n", "agent/prompts/system.md": "{{ default_prompt }} {{ user.name }} {{ section: rules }}"})
	for _, d := range render(t, dir, prompt.Options{}).Report.Diagnostics {
		if d.Code == "prompt.placeholder-typo" {
			t.Errorf("unexpected warning: %v", d)
		}
	}
}

var validList = regexp.MustCompile(`\(valid: ([^)]*)\)`)

// Every top-level part of both presets can be placed, skills and active
// skills included, and the list of valid names an unknown one gets is the
// list of parts the prompt actually has.
func TestEverySectionIsPlaceable(t *testing.T) {
	always := "---\nname: daily\ndescription: d\nalways: true\n---\nDo the daily thing.\n"
	listed := "---\nname: weekly\ndescription: w\n---\nDo the weekly thing.\n"
	for _, preset := range []string{prompt.Assistant, prompt.Analyst} {
		t.Run(preset, func(t *testing.T) {
			files := map[string]string{
				"RULES.md": "Use EUR.\n", "AGENTS.md": "Be kind.\n",
				"skills/daily/SKILL.md": always, "skills/weekly/SKILL.md": listed,
				"memory/MEMORY.md": "The user likes tea.\n",
			}
			base := render(t, write(t, files), prompt.Options{Preset: preset, ChatURL: "https://x.test/c/1"})
			var top []string
			for _, e := range base.Report.Sections() {
				if e.Start >= 0 {
					top = append(top, e.Name)
				}
			}
			files["agent/prompts/system.md"] = "{{ section:nope }}"
			res := render(t, write(t, files), prompt.Options{Preset: preset, ChatURL: "https://x.test/c/1"})
			var valid []string
			for _, d := range res.Report.Diagnostics {
				if m := validList.FindStringSubmatch(d.Message); m != nil {
					valid = strings.Split(m[1], ", ")
				}
			}
			if valid == nil {
				t.Fatalf("no list of valid names: %v", res.Report.Diagnostics)
			}
			for _, name := range top {
				if !slices.Contains(valid, name) {
					t.Errorf("top-level part %q is not placeable (valid: %v)", name, valid)
				}
			}
			for _, name := range []string{"skills", "memory", "chat_link"} {
				if !slices.Contains(valid, name) {
					t.Errorf("%q missing from %v", name, valid)
				}
			}
			if preset == prompt.Assistant && !slices.Contains(valid, "active_skills") {
				t.Errorf("active_skills missing from %v", valid)
			}
			// Each valid name places text that the default prompt has.
			for _, name := range valid {
				files["agent/prompts/system.md"] = fmt.Sprintf("BEFORE\n\n{{ section:%s }}", name)
				got := render(t, write(t, files), prompt.Options{Preset: preset, ChatURL: "https://x.test/c/1"})
				body := strings.TrimPrefix(got.Prompt, "BEFORE\n\n")
				if strings.TrimSpace(body) == "" || !strings.Contains(base.Prompt, body) {
					t.Errorf("{{ section:%s }} placed %q, which the default prompt does not hold", name, body)
				}
			}
			files["agent/prompts/system.md"] = "{{ section:skills }}"
			if got := render(t, write(t, files), prompt.Options{Preset: preset}).Prompt; !strings.Contains(got, "weekly") {
				t.Errorf("{{ section:skills }} placed %q", got)
			}
		})
	}
}
