package skills

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// testdata is the repository's folder of real skill files (see its README).
const testdata = "../testdata/skills"

func realPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(testdata, rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("real test files missing (they are part of the repository): %v", err)
	}
	// The loader names extra folders by their real path; so must the test,
	// wherever the checkout is (a copy, or a link to one).
	if p, err = filepath.EvalSymlinks(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRealFiles loads every real skill under the shared testdata, as extra
// folders outside the workspace, and checks what the testdata README says
// a YAML 1.2 parser gives, plus the diagnostics a careful reader expects.
func TestRealFiles(t *testing.T) {
	opts := env([]string{"curl", "gh"}, nil, "linux")
	opts.NoBuiltins = true
	opts.Paths = []string{
		realPath(t, "anthropics"),
		realPath(t, "nanobot/v0.1.4.post4"),
		realPath(t, "misc/awesome-copilot"),
		realPath(t, "misc/agent-skills"),
		realPath(t, "misc/claude-scientific-skills"),
	}
	set := New(openWS(t, t.TempDir()), opts).Load()

	var names []string
	for _, sk := range set.Skills {
		names = append(names, sk.Name+"/"+string(sk.Status))
	}
	want := []string{
		"agentic-eval/ok", "algorithmic-art/ok", "brag-sheet/ok", "brand-guidelines/ok", "canvas-design/ok",
		"claude-api/warning", "clawhub/ok", "composition-patterns/warning", "copilot-cli-quickstart/ok", "cron/ok",
		"frontend-design/ok", "geomaster/ok", "github/ok", "gsap-framer-scroll-animation/ok", "internal-comms/ok",
		"mcp-builder/ok", "memory/ok",
		"skill-creator/ok", "skill-creator/shadowed", // anthropics is listed first, so it wins over nanobot's
		"slack-gif-creator/ok", "summarize/ok", "theme-factory/ok", "tmux/ok", "weather/ok",
		"web-artifacts-builder/ok", "webapp-testing/ok",
	}
	if !slices.Equal(names, want) {
		t.Errorf("skills:\n got %q\nwant %q", names, want)
	}

	// Exactly these diagnostics: no LICENSE, SOURCE.md, README.md or nested
	// references/*.md taken as a skill, nothing else flagged.
	var got []string
	for _, d := range set.Diagnostics {
		got = append(got, strings.TrimPrefix(d.String(), filepath.Dir(opts.Paths[0])+"/"))
	}
	wantDiags := []string{
		"anthropics/claude-api/SKILL.md:3: warning: description is 1068 characters; the limit is 1024",
		`misc/agent-skills/composition-patterns/SKILL.md:2: warning: name "vercel-composition-patterns" does not match "composition-patterns", the name its place gives it; listed as "composition-patterns"`,
		`nanobot/v0.1.4.post4/skill-creator/SKILL.md: warning: skill "skill-creator" is shadowed by ` + filepath.Join(opts.Paths[0], "skill-creator/SKILL.md"),
	}
	if !slices.Equal(got, wantDiags) {
		t.Errorf("diagnostics:\n got %q\nwant %q", got, wantDiags)
	}

	desc := map[string]struct {
		chars, newlines int
		trailing        bool
	}{
		"brag-sheet":                   {848, -1, true},
		"gsap-framer-scroll-animation": {827, 0, false},
		"agentic-eval":                 {446, 6, false},
		"copilot-cli-quickstart":       {368, -1, true},
		"geomaster":                    {717, -1, false},
		"composition-patterns":         {310, 0, false},
		"claude-api":                   {1068, -1, false},
	}
	for name, w := range desc {
		sk, ok := set.Get(name)
		if !ok {
			t.Errorf("%s: not found", name)
			continue
		}
		d := sk.Description()
		if n := utf8.RuneCountInString(d); n != w.chars {
			t.Errorf("%s: description is %d characters, want %d", name, n, w.chars)
		}
		if w.newlines >= 0 && strings.Count(d, "\n") != w.newlines {
			t.Errorf("%s: description has %d newlines, want %d", name, strings.Count(d, "\n"), w.newlines)
		}
		if strings.HasSuffix(d, "\n") != w.trailing {
			t.Errorf("%s: trailing newline = %v, want %v", name, !w.trailing, w.trailing)
		}
		if strings.Contains(d, "\r") {
			t.Errorf("%s: description keeps a CR", name)
		}
	}

	check := func(name string, fn func(sk *Skill) bool, what string) {
		t.Helper()
		sk, ok := set.Get(name)
		if !ok || !fn(sk) {
			t.Errorf("%s: want %s; got %+v", name, what, sk)
		}
	}
	check("memory", func(s *Skill) bool { return s.Always() }, "always (top-level always: true)")
	check("tmux", func(s *Skill) bool {
		return !s.Available && s.MissingText() == "CLI: tmux" && slices.Equal(s.Frontmatter.OS, []string{"darwin", "linux"}) && s.Frontmatter.Emoji == "🧵"
	}, "unavailable for want of tmux, os darwin/linux")
	check("weather", func(s *Skill) bool { return s.Available && s.Frontmatter.Emoji == "\U0001F324\uFE0F" }, "available (curl), emoji with variation selector")
	check("github", func(s *Skill) bool {
		return s.Available && slices.Equal(s.Frontmatter.Requires.Bins, []string{"gh"}) && strings.Contains(s.Description(), "`gh issue`")
	}, "available via gh, backticks kept")
	check("summarize", func(s *Skill) bool {
		return !s.Available && strings.Contains(s.Description(), "“transcribe this YouTube/video”")
	}, "unavailable, curly quotes kept")
	check("copilot-cli-quickstart", func(s *Skill) bool {
		return slices.Equal(s.Frontmatter.AllowedTools, []string{"ask_user", "sql", "fetch_copilot_cli_documentation"})
	}, "comma-separated allowed-tools split")
	check("brag-sheet", func(s *Skill) bool {
		return s.Frontmatter.Metadata["version"] == "1.1" && s.Frontmatter.License == "MIT"
	}, "metadata.version \"1.1\" as a string")
	check("geomaster", func(s *Skill) bool {
		return s.Frontmatter.Metadata["skill-author"] == "K-Dense Inc." && !strings.Contains(s.Body, "\r") && strings.HasPrefix(s.Body, "#")
	}, "CRLF normalised, 4-space metadata read")
	check("claude-api", func(s *Skill) bool { return len(s.Body) > 60_000 }, "its whole 74 KB body")
	check("clawhub", func(s *Skill) bool { return s.Available && s.Frontmatter.Emoji == "🦞" }, "emoji only")
	check("skill-creator", func(s *Skill) bool { return s.Source == SourceExtra && strings.Contains(s.Path, "anthropics") }, "anthropics' version")

	// The HEAD copy of nanobot: memory is no longer always-on, update-setup
	// has a Chinese description.
	opts.Paths = []string{realPath(t, "nanobot/head")}
	head := New(openWS(t, t.TempDir()), opts).Load()
	if len(head.Skills) != 11 || len(head.Diagnostics) != 0 {
		t.Errorf("nanobot head: %d skills, diagnostics %q; want 11 and none", len(head.Skills), diagStrings(head.Diagnostics))
	}
	if sk, _ := head.Get("memory"); sk == nil || sk.Always() {
		t.Errorf("nanobot head memory: want not always-on")
	}
	if sk, _ := head.Get("update-setup"); sk == nil || utf8.RuneCountInString(sk.Description()) != 107 {
		t.Errorf("update-setup description: %+v", sk)
	}
}

// TestRealWorkspaceNao loads the nao example's flat agent/skills file
// through the workspace itself.
func TestRealWorkspaceNao(t *testing.T) {
	dir := realPath(t, "../workspaces/nao/nao_demo-example")
	opts := env(nil, nil, "linux")
	opts.NoBuiltins = true
	set := New(openWS(t, dir), opts).Load()
	if len(set.Skills) != 1 || set.Skills[0].Name != "top-customers" || set.Skills[0].Path != "agent/skills/top-customers.md" {
		t.Fatalf("want the one flat skill top-customers; got %+v", set.Skills)
	}
	if d := set.Skills[0].Description(); d == "" {
		t.Error("top-customers: empty description")
	}
	t.Logf("diagnostics: %q", diagStrings(set.Diagnostics))
}
