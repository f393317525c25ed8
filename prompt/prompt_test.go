package prompt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/golden"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/starter"
	"github.com/loomctx/loom/workspace"
)

var fixedNow = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

// testCache is where the tests' renders put the built-in skills' files
// ($LOOM_CACHE_DIR); golden files show it as $LOOM_CACHE_DIR, since the
// prompt gives the agent its absolute path.
var testCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loom-prompt-cache-")
	if err != nil {
		panic(err)
	}
	testCache = dir
	os.Setenv(skills.EnvCacheDir, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// scrubCache is prompt with the test cache folder written as $LOOM_CACHE_DIR.
func scrubCache(prompt string) []byte {
	return []byte(strings.ReplaceAll(prompt, testCache, "$LOOM_CACHE_DIR"))
}

// write creates files (slash paths → content) under a new temp workspace.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// copyTree copies a shared test workspace to a temporary folder: a render
// writes loom's built-in skills into the workspace, and shared data must stay
// as it is.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	if _, err := os.Stat(src); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "ws")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func render(t *testing.T, dir string, opts prompt.Options) *prompt.Result {
	t.Helper()
	if opts.GOOS == "" {
		opts.GOOS, opts.GOARCH = "linux", "amd64"
	}
	if opts.Now.IsZero() {
		opts.Now = fixedNow
	}
	res, err := prompt.Render(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func hasDiag(res *prompt.Result, path, substr string) bool {
	for _, d := range res.Report.Diagnostics {
		if d.Path == path && strings.Contains(d.Message, substr) {
			return true
		}
	}
	return false
}

func TestNanobotWorkspace(t *testing.T) {
	dir := copyTree(t, "../testdata/workspaces/nanobot")
	res := render(t, dir, prompt.Options{})
	if res.Report.Preset != prompt.Assistant {
		t.Fatalf("preset %s, want assistant (no loom.yaml, no databases/ or RULES.md)", res.Report.Preset)
	}
	golden.Check(t, "nanobot", scrubCache(res.Prompt))
	// nanobot's untouched onboarding questionnaire and memory template say
	// nothing about the user: they are left out, with a diagnostic.
	for _, f := range []string{"USER.md", "memory/MEMORY.md"} {
		if !hasDiag(res, f, "nanobot's onboarding") {
			t.Errorf("no diagnostic for nanobot's %s template: %v", f, res.Report.Diagnostics)
		}
	}
	if strings.Contains(res.Prompt, "## USER.md") || strings.Contains(res.Prompt, "Long-term Memory") {
		t.Error("an untouched nanobot template is in the prompt")
	}
	// Filled in, they are kept.
	for _, f := range []string{"USER.md", "memory/MEMORY.md"} {
		p := filepath.Join(dir, f)
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, append(b, "\n- Name: Ada\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res = render(t, dir, prompt.Options{})
	// nanobot's part order and headings.
	order := []string{"# loom", "## AGENTS.md", "## SOUL.md", "## USER.md", "## TOOLS.md", "# Memory", "## Long-term Memory", "# Active Skills", "# Skills"}
	last := -1
	for _, h := range order {
		i := strings.Index(res.Prompt, "\n"+h+"\n")
		if h == "# loom" {
			i = strings.Index(res.Prompt, h)
		}
		if i < 0 {
			if h == "# Active Skills" {
				continue // no always-on skill is available here
			}
			t.Fatalf("missing %q", h)
		}
		if i < last {
			t.Errorf("%q out of order", h)
		}
		last = i
	}
	if strings.Contains(res.Prompt, "## HEARTBEAT.md") {
		t.Error("HEARTBEAT.md is not a bootstrap file")
	}
	if strings.Count(res.Prompt, "\n---\n") < 3 {
		t.Error("parts are not separated by --- lines")
	}
}

func TestNaoProject(t *testing.T) {
	for _, name := range []string{"getnao-example", "nao_demo-example"} {
		t.Run(name, func(t *testing.T) {
			res := render(t, copyTree(t, "../testdata/workspaces/nao/"+name), prompt.Options{})
			if res.Report.Preset != prompt.Analyst {
				t.Fatalf("preset %s", res.Report.Preset)
			}
			golden.Check(t, name, scrubCache(res.Prompt))
			for _, want := range []string{"## Instructions", "Tuesday, March 10, 2026 (UTC)", "## Persona", "## Tool Calls", "## SQL Query Rules",
				"**DuckDB:**\n  - ", "## User Rules", "## Current Connections\n\n- duckdb database=jaffle_shop", "\n---\n"} {
				if !strings.Contains(res.Prompt, want) {
					t.Errorf("missing %q", want)
				}
			}
		})
	}
}

func TestAssistantIsStable(t *testing.T) {
	dir := write(t, map[string]string{"AGENTS.md": "Be terse.\n"})
	a := render(t, dir, prompt.Options{Now: fixedNow})
	b := render(t, dir, prompt.Options{Now: fixedNow.Add(26 * time.Hour)})
	if a.Prompt != b.Prompt {
		t.Error("the assistant prompt changed with the clock")
	}
}

func TestEmptyAndTemplateBootstrapFilesAreLeftOut(t *testing.T) {
	dir := write(t, map[string]string{"AGENTS.md": "Be terse.\n", "USER.md": "  \n"})
	res := render(t, dir, prompt.Options{})
	if strings.Contains(res.Prompt, "## USER.md") {
		t.Error("empty USER.md was included")
	}
	if !hasDiag(res, "USER.md", "empty") {
		t.Errorf("no diagnostic for the empty file: %v", res.Report.Diagnostics)
	}
	if !strings.Contains(res.Prompt, "## AGENTS.md\n\nBe terse.") {
		t.Error("AGENTS.md missing")
	}
}

func TestAnalystRules(t *testing.T) {
	dir := write(t, map[string]string{
		"RULES.md": "Revenue is in EUR.\n",
		"databases/type=RedShift/database=wh/x.md":       "",
		"databases/type=mssql/database=a/x.md":           "",
		"databases/type=fabric/database=b/x.md":          "",
		"databases/type=/database=skip/x.md":             "",
		"databases/Type=pg/database=skip/x.md":           "",
		"databases/type=pg/notes.md":                     "",
		"databases/type=postgres/database=a=b/x.md":      "",
		"databases/type=clickhouse/database=events/x.md": "",
	})
	res := render(t, dir, prompt.Options{})
	p := res.Prompt
	for _, want := range []string{
		"- RedShift database=wh", "- clickhouse database=events", "- fabric database=b", "- mssql database=a", "- postgres database=a=b",
		"**Redshift:**", "indexes.md",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Count(p, "**T-SQL") != 1 {
		t.Error("the T-SQL rules must appear once for two connections")
	}
	if strings.Contains(p, "database=skip") || strings.Contains(p, "- pg ") {
		t.Error("folders nao ignores were listed")
	}
	tools := p[strings.Index(p, "## Tool Calls"):strings.Index(p, "## SQL Query Rules")]
	if !strings.Contains(tools, "indexes.md") {
		t.Error("the ClickHouse rule belongs under Tool Calls")
	}
	if !strings.Contains(tools, "clarification") {
		t.Error("clarification rule missing outside test mode")
	}
	test := render(t, dir, prompt.Options{TestMode: true, Tools: []string{"read"}})
	if strings.Contains(test.Prompt, "clarification") || strings.Contains(test.Prompt, "run it with execute_sql") {
		t.Error("--test-mode / --tools did not gate the tool rules")
	}
}

func TestInvalidTimezone(t *testing.T) {
	dir := write(t, map[string]string{"RULES.md": "x\n"})
	res := render(t, dir, prompt.Options{Timezone: "Invalid/Zone"})
	if !strings.Contains(res.Prompt, "(UTC)") || !hasDiag(res, "", "Invalid/Zone") {
		t.Errorf("want UTC and a diagnostic; got %v", res.Report.Diagnostics)
	}
	la := render(t, dir, prompt.Options{Timezone: "America/Los_Angeles", Now: time.Date(2026, 3, 11, 1, 0, 0, 0, time.UTC)})
	if !strings.Contains(la.Prompt, "Tuesday, March 10, 2026 (America/Los_Angeles)") {
		t.Error("the date is not in the configured zone")
	}
}

func TestOverrides(t *testing.T) {
	base := map[string]string{"RULES.md": "Use EUR.\n"}
	with := func(extra map[string]string) string {
		files := map[string]string{}
		for k, v := range base {
			files[k] = v
		}
		for k, v := range extra {
			files[k] = v
		}
		return write(t, files)
	}
	t.Run("full replacement", func(t *testing.T) {
		res := render(t, with(map[string]string{"agent/prompts/system.md": "You are Bob.\n"}), prompt.Options{})
		if res.Prompt != "You are Bob." {
			t.Errorf("got %q", res.Prompt)
		}
	})
	t.Run("keep sections", func(t *testing.T) {
		res := render(t, with(map[string]string{"agent/prompts/system.md": "You are Bob.\n", "loom.yaml": "overrides:\n  keep: [rules]\n"}), prompt.Options{})
		if res.Prompt != "You are Bob.\n\n## User Rules\n\nUse EUR." {
			t.Errorf("got %q", res.Prompt)
		}
	})
	t.Run("default prompt is literal", func(t *testing.T) {
		res := render(t, with(map[string]string{"agent/prompts/system.md": "HEAD $& $$\n{{\n  nao_prompt }}\nFOOT {{default_prompt}}"}), prompt.Options{})
		if !strings.HasPrefix(res.Prompt, "HEAD $& $$\n## Instructions") || !strings.Contains(res.Prompt, "`$$...$$`") {
			t.Errorf("got %q", res.Prompt[:min(200, len(res.Prompt))])
		}
		if n := strings.Count(res.Prompt, "## Instructions"); n != 1 {
			t.Errorf("the default prompt is placed %d times, want once", n)
		}
		if !hasDiag(res, "agent/prompts/system.md", "placed again") {
			t.Errorf("no diagnostic for the repeated placeholder: %v", res.Report.Diagnostics)
		}
	})
	t.Run("one section", func(t *testing.T) {
		res := render(t, with(map[string]string{"agent/prompts/system.md": "Intro\n\n{{ section:persona }}\n\n{{ section:nope }}\n{ \"json\": {{ \"x\" }} }"}), prompt.Options{})
		if !strings.HasPrefix(res.Prompt, "Intro\n\n## Persona\n\n- **") || !strings.HasSuffix(res.Prompt, "\n\n\n{ \"json\": {{ \"x\" }} }") {
			t.Errorf("got %q", res.Prompt)
		}
		if !hasDiag(res, "agent/prompts/system.md", "valid: ") {
			t.Errorf("no diagnostic for the unknown section: %v", res.Report.Diagnostics)
		}
	})
	t.Run("channel file first, blank falls through", func(t *testing.T) {
		dir := with(map[string]string{"agent/prompts/slack.md": "SLACK", "agent/prompts/teams.md": " \n", "agent/prompts/system.md": "SYSTEM"})
		if got := render(t, dir, prompt.Options{Channel: "slack"}).Prompt; got != "SLACK" {
			t.Errorf("slack: %q", got)
		}
		if got := render(t, dir, prompt.Options{Channel: "teams"}).Prompt; got != "SYSTEM" {
			t.Errorf("teams: %q", got)
		}
		if got := render(t, dir, prompt.Options{}).Prompt; got != "SYSTEM" {
			t.Errorf("no channel: %q", got)
		}
	})
	t.Run("outside the workspace", func(t *testing.T) {
		outside := write(t, map[string]string{"evil.md": "PWNED"})
		dir := with(nil)
		os.MkdirAll(filepath.Join(dir, "agent/prompts"), 0o755)
		if err := os.Symlink(filepath.Join(outside, "evil.md"), filepath.Join(dir, "agent/prompts/system.md")); err != nil {
			t.Fatal(err)
		}
		res := render(t, dir, prompt.Options{})
		if strings.Contains(res.Prompt, "PWNED") || !strings.Contains(res.Prompt, "## Instructions") {
			t.Error("an override outside the workspace was used")
		}
		if !hasDiag(res, "agent/prompts/system.md", "outside") {
			t.Errorf("no diagnostic: %v", res.Report.Diagnostics)
		}
	})
}

func TestChannelAndForkWrappers(t *testing.T) {
	dir := write(t, map[string]string{"RULES.md": "x\n"})
	res := render(t, dir, prompt.Options{Channel: "whatsapp", ChatURL: "https://x.dev/c/1", Fork: &prompt.Fork{Title: "Q3", Author: "Ana", Selection: "line one\nline two"}})
	p := res.Prompt
	if !strings.Contains(p, "> line one\n> line two") {
		t.Error("selection not quoted on every line")
	}
	if !strings.Contains(p, "https://x.dev/c/1") {
		t.Error("chat link missing")
	}
	for _, ln := range strings.Split(p, "\n") {
		if strings.HasPrefix(ln, "## ") && strings.Count(ln, "##") > 1 {
			t.Errorf("run-on heading line %q", ln)
		}
	}
	unknown := render(t, dir, prompt.Options{Channel: "carrier-pigeon"})
	if !hasDiag(unknown, "", "carrier-pigeon") {
		t.Error("no diagnostic for an unknown channel")
	}
}

func TestSubagent(t *testing.T) {
	dir := write(t, map[string]string{
		"AGENTS.md": "secret bootstrap\n", "memory/MEMORY.md": "secret memory\n",
		"skills/notes/SKILL.md": "---\nname: notes\ndescription: Take notes\n---\nbody\n",
	})
	res := render(t, dir, prompt.Options{Subagent: true})
	if strings.Contains(res.Prompt, "secret") {
		t.Error("a subagent gets no bootstrap files and no memory")
	}
	for _, want := range []string{"# Subagent", "## Workspace", "<name>notes</name>", "<location>skills/notes/SKILL.md</location>"} {
		if !strings.Contains(res.Prompt, want) {
			t.Errorf("missing %q in\n%s", want, res.Prompt)
		}
	}
}

func TestBudgetDropsSkillsFirst(t *testing.T) {
	files := map[string]string{"AGENTS.md": "Be terse.\n", "memory/MEMORY.md": strings.Repeat("- a fact worth keeping\n", 40)}
	for _, n := range []string{"alpha", "beta", "gamma", "delta"} {
		files["skills/"+n+"/SKILL.md"] = "---\nname: " + n + "\ndescription: The " + n + " skill does a fairly long list of useful things.\n---\nbody\n"
	}
	dir := write(t, files)
	full := render(t, dir, prompt.Options{})
	res, err := prompt.Render(context.Background(), dir, prompt.Options{GOOS: "linux", GOARCH: "amd64", Budget: full.Report.Tokens - 60})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Tokens > full.Report.Tokens-60 {
		t.Errorf("%d tokens over budget", res.Report.Tokens)
	}
	var dropped []string
	for _, e := range res.Report.Sections() {
		if e.Status == md.Dropped {
			dropped = append(dropped, e.Name)
		}
	}
	if len(dropped) == 0 || !strings.HasPrefix(dropped[0], "skill:") {
		t.Errorf("dropped %v; skills summary entries should go first", dropped)
	}
	if !strings.Contains(res.Prompt, "Be terse.") {
		t.Error("a bootstrap file was dropped")
	}
	_, err = prompt.Render(context.Background(), dir, prompt.Options{Budget: 10})
	var over *md.OverBudgetError
	if !errors.As(err, &over) {
		t.Errorf("want an over-budget error, got %v", err)
	}
}

func TestMissingWorkspace(t *testing.T) {
	_, err := prompt.Render(context.Background(), filepath.Join(t.TempDir(), "nope"), prompt.Options{})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("err = %v", err)
	}
}

func TestBadConfigIsAnError(t *testing.T) {
	dir := write(t, map[string]string{"loom.yaml": "name: x\nbudgt: 3\n"})
	_, err := prompt.Render(context.Background(), dir, prompt.Options{})
	if err == nil || !strings.Contains(err.Error(), "loom.yaml:2") {
		t.Errorf("err = %v", err)
	}
}

func TestWarmRenderReadsNothingAgain(t *testing.T) {
	dir := write(t, map[string]string{"AGENTS.md": "Be terse.\n", "skills/a/SKILL.md": "---\nname: a\ndescription: A.\n---\nx\n"})
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := prompt.New(ws)
	defer b.Close()
	first, err := b.Render(context.Background(), prompt.Options{GOOS: "linux", GOARCH: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	f1, _ := ws.Load("AGENTS.md")
	second, _ := b.Render(context.Background(), prompt.Options{GOOS: "linux", GOARCH: "amd64"})
	f2, _ := ws.Load("AGENTS.md")
	if first.Prompt != second.Prompt || f1 != f2 {
		t.Error("a warm render read an unchanged file again")
	}
}

func TestFreshStarterWorkspace(t *testing.T) {
	for _, preset := range starter.Presets() {
		t.Run(preset, func(t *testing.T) {
			dir := t.TempDir()
			if _, _, err := starter.Write(dir, preset); err != nil {
				t.Fatal(err)
			}
			res := render(t, dir, prompt.Options{})
			if res.Report.Preset != preset {
				t.Errorf("preset %s", res.Report.Preset)
			}
			golden.Check(t, "starter-"+preset, scrubCache(res.Prompt))
			untouched := 0
			for _, d := range res.Report.Diagnostics {
				if strings.Contains(d.Message, "starter template") {
					untouched++
				}
			}
			if untouched == 0 {
				t.Error("no untouched template was reported")
			}
			for _, leak := range []string{"## USER.md", "## User Rules", "example-skill"} {
				if strings.Contains(res.Prompt, leak) {
					t.Errorf("an untouched template reached the prompt: %q", leak)
				}
			}
		})
	}
}

func TestMemories(t *testing.T) {
	dir := write(t, map[string]string{"RULES.md": "x\n", "memory/MEMORY.md": "- Likes tea\n"})
	store, err := memory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	long := strings.Repeat("A very long remembered detail about the project. ", 120)
	if _, err := store.Add(ctx,
		memory.NewMemory{Category: "global_rule", Content: "  always   answer in French  "},
		memory.NewMemory{Category: "personal_fact", Content: "The user is Alex"},
		memory.NewMemory{Category: "personal_fact", Content: long},
		memory.NewMemory{Category: "personal_fact", Content: "Only for Bo", User: "bo"},
		memory.NewMemory{Category: "personal_fact", Content: "From this chat", Chat: "c1"},
	); err != nil {
		t.Fatal(err)
	}
	store.Close()

	res := render(t, dir, prompt.Options{ChatID: "c1"})
	p := res.Prompt
	// Stored as given, white space collapsed: no full stop added (#31).
	want := "### Global User Rules\n\n- always answer in French\n\n### User Profile\n\n- The user is Alex\n\n1 more memory"
	if !strings.Contains(p, "## Memory\n\n") || !strings.Contains(p, want) {
		t.Errorf("memory block:\n%s", p[strings.Index(p, "## Memory"):])
	}
	if strings.Contains(p, "Only for Bo") || strings.Contains(p, "From this chat") || strings.Contains(p, "long remembered") {
		t.Error("a memory that should be left out is in the prompt")
	}
	reasons := map[string]bool{}
	for _, e := range res.Report.Sections() {
		if strings.HasPrefix(e.Name, "memory/") && e.Status == md.Dropped {
			reasons[e.Reason] = true
		}
	}
	// memory.retrieval is relevant by default: the system prompt keeps
	// half of the 1,000-token budget, the other half is recalled per turn.
	if !reasons["came from the current chat"] || !reasons["did not fit the memory budget of 500 tokens"] {
		t.Errorf("report reasons %v", reasons)
	}
	bo := render(t, dir, prompt.Options{User: "bo", Preset: prompt.Assistant})
	if !strings.Contains(bo.Prompt, "# Memory\n\n## Long-term Memory\n\n- Likes tea") || !strings.Contains(bo.Prompt, "- Only for Bo\n") {
		t.Errorf("assistant memory block:\n%s", bo.Prompt[strings.Index(bo.Prompt, "# Memory"):])
	}
}

func TestBrokenMemoryStore(t *testing.T) {
	dir := write(t, map[string]string{"RULES.md": "x\n", ".loom/memory.db": "this is not a database, just text"})
	res := render(t, dir, prompt.Options{})
	if !strings.Contains(res.Prompt, "## Instructions") || !hasDiag(res, ".loom/memory.db", "memories left out") {
		t.Errorf("diagnostics %v", res.Report.Diagnostics)
	}
}

// TestReusedRenderSeesEveryChange: a builder that reuses its last result
// must still see each kind of change.
func TestReusedRenderSeesEveryChange(t *testing.T) {
	dir := write(t, map[string]string{
		"AGENTS.md":             "Be terse.\n",
		"skills/env/SKILL.md":   "---\nname: env\ndescription: Needs a token.\nmetadata: {\"nanobot\":{\"requires\":{\"env\":[\"LOOM_TEST_REUSE_TOKEN\"]}}}\n---\nx\n",
		"skills/plain/SKILL.md": "---\nname: plain\ndescription: Plain.\n---\nx\n",
	})
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := prompt.New(ws)
	defer b.Close()
	opts := prompt.Options{GOOS: "linux", GOARCH: "amd64"}
	get := func() string {
		t.Helper()
		res, err := b.Render(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return res.Prompt
	}
	first := get()
	if get() != first {
		t.Fatal("two renders of an unchanged workspace differ")
	}
	// A change of the same size within the same second.
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Be brief.\n"), 0o644)
	if p := get(); !strings.Contains(p, "Be brief.") {
		t.Error("an edited file was not seen")
	}
	os.MkdirAll(filepath.Join(dir, "skills/fresh"), 0o755)
	os.WriteFile(filepath.Join(dir, "skills/fresh/SKILL.md"), []byte("---\nname: fresh\ndescription: Brand new.\n---\nx\n"), 0o644)
	if p := get(); !strings.Contains(p, "Brand new.") {
		t.Error("a new skill was not seen")
	}
	t.Setenv("LOOM_TEST_REUSE_TOKEN", "set")
	if p := get(); strings.Contains(p, "ENV: LOOM_TEST_REUSE_TOKEN") {
		t.Error("a skill's availability change was not seen")
	}
	os.Remove(filepath.Join(dir, "AGENTS.md"))
	if p := get(); strings.Contains(p, "## AGENTS.md") {
		t.Error("a deleted file was not seen")
	}
	opts.Channel = "slack"
	if p := get(); !strings.Contains(p, "Slack") {
		t.Error("an option change was not seen")
	}
}

func TestWatchedWorkspaceRender(t *testing.T) {
	dir := write(t, map[string]string{"AGENTS.md": "Be terse.\n", "skills/a/SKILL.md": "---\nname: a\ndescription: A.\n---\nx\n"})
	ws, b := watchedBuilderAt(t, dir)
	opts := prompt.Options{GOOS: "linux", GOARCH: "amd64"}
	first, err := b.Render(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !ws.Watching() {
		t.Fatalf("watch does not cover the workspace (%v)", ws.WatchErr())
	}
	if again, _ := b.Render(context.Background(), opts); again != first {
		t.Error("an unchanged watched workspace was rendered again")
	}
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Be brief.\n"), 0o644)
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := b.Render(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Prompt, "Be brief.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the change never reached the prompt")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLongMemoryFileIsCutToItsOwnBudget(t *testing.T) {
	var lines []string
	for i := range 600 {
		lines = append(lines, fmt.Sprintf("- fact %d: the user mentioned something worth keeping about project %d.", i, i))
	}
	dir := write(t, map[string]string{"AGENTS.md": "Be terse.\n", "memory/MEMORY.md": strings.Join(lines, "\n") + "\n"})
	res := render(t, dir, prompt.Options{})
	if !strings.Contains(res.Prompt, "- fact 0:") || strings.Contains(res.Prompt, "- fact 599:") || !strings.Contains(res.Prompt, "cut from memory/MEMORY.md]") {
		t.Error("MEMORY.md was not cut at its own budget with a marker")
	}
	for _, e := range res.Report.Sections() {
		if e.Name == "memory_file" {
			if e.Status != md.Truncated || e.Tokens > prompt.DefaultMemoryFileBudget {
				t.Errorf("report %+v", e)
			}
			return
		}
	}
	t.Error("no report entry for memory_file")
}

// TestBudgetCanDropActiveSkills pins the Active Skills section's priority: a
// budget that only fits without the always-on skill's body must drop that
// section, not fail. (54772f9 lost the priority when the scope setters
// began to return new scopes, and such a render failed as over budget.)
func TestBudgetCanDropActiveSkills(t *testing.T) {
	files := map[string]string{
		"AGENTS.md":             "Be terse.\n",
		"skills/big/SKILL.md":   "---\nname: big\ndescription: A large always-on skill.\nalways: true\n---\n" + strings.Repeat("Follow this long always-on rule about formatting replies.\n", 60),
		"skills/small/SKILL.md": "---\nname: small\ndescription: A small skill.\n---\nbody\n",
	}
	dir := write(t, files)
	full := render(t, dir, prompt.Options{GOOS: "linux", GOARCH: "amd64"})
	budget := full.Report.Tokens / 2
	res, err := prompt.Render(context.Background(), dir, prompt.Options{GOOS: "linux", GOARCH: "amd64", Budget: budget})
	if err != nil {
		t.Fatalf("budget %d of %d: %v", budget, full.Report.Tokens, err)
	}
	if res.Report.Tokens > budget {
		t.Errorf("%d tokens over the budget of %d", res.Report.Tokens, budget)
	}
	dropped := false
	for _, e := range res.Report.Sections() {
		if e.Name == "active_skills" && e.Status == md.Dropped {
			dropped = true
		}
	}
	if !dropped || strings.Contains(res.Prompt, "long always-on rule") {
		t.Errorf("the Active Skills section was kept under a budget of %d:\n%s", budget, res.Prompt)
	}
	if !strings.Contains(res.Prompt, "Be terse.") {
		t.Error("a bootstrap file was dropped")
	}
}
