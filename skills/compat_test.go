package skills

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/workspace"
)

// nao names a flat skill by its frontmatter name; the file name is the
// fallback. Two skills of one name: the first in precedence wins.
func TestFlatSkillNamedByFrontmatter(t *testing.T) {
	set := load(t, map[string]string{
		"agent/skills/churn.md":    skillMD("churn-rate", "Compute churn"),
		"agent/skills/plain.md":    "---\ndescription: no name here\n---\nBody\n",
		"agent/skills/a-first.md":  skillMD("dup", "first"),
		"agent/skills/b-second.md": skillMD("dup", "second"),
		"agent/skills/top.md":      skillMD("topname", "flat"),
		"skills/topname/SKILL.md":  skillMD("topname", "folder"),
	}, noBuiltins(Options{}))
	sk, ok := set.Get("churn-rate")
	if !ok || sk.Path != "agent/skills/churn.md" {
		t.Fatalf("churn-rate: %+v %v", sk, ok)
	}
	if _, ok := set.Get("churn"); ok {
		t.Error("the file name still names the skill")
	}
	for _, d := range sk.Diagnostics {
		if strings.Contains(d.Message, "does not match") {
			t.Errorf("warning for nao's naming: %v", d)
		}
	}
	if _, ok := set.Get("plain"); !ok {
		t.Error("a flat skill without a name is not named by its file")
	}
	if d, _ := set.Get("dup"); d == nil || d.Description() != "first" {
		t.Errorf("dup winner %+v", d)
	}
	if w, _ := set.Get("topname"); w == nil || w.Description() != "folder" {
		t.Errorf("skills/ must win over agent/skills/: %+v", w)
	}
	shadowed := 0
	for _, s := range set.Skills {
		if s.Status == StatusShadowed {
			shadowed++
		}
	}
	if shadowed != 2 {
		t.Errorf("%d shadowed, want 2", shadowed)
	}
	out, uses := set.Expand("/churn-rate please", 0)
	if len(uses) != 1 || !strings.Contains(out, `name="churn-rate"`) {
		t.Errorf("expansion %q %v", out, uses)
	}
	if txt := md.String(set.Summary(PromptOptions{})); !strings.Contains(txt, "<name>churn-rate</name>") {
		t.Errorf("summary:\n%s", txt)
	}
}

func TestDescriptionCutAtCommentWarns(t *testing.T) {
	set := load(t, map[string]string{
		"skills/tags/SKILL.md":   "---\nname: tags\ndescription: Fetch #hashtags and stuff\n---\nBody\n",
		"skills/quoted/SKILL.md": "---\nname: quoted\ndescription: \"Fetch #hashtags\" # a real comment\n---\nBody\n",
		"skills/bare/SKILL.md":   "---\nname: bare\n---\nBody\n",
	}, noBuiltins(Options{}))
	tags, _ := set.Get("tags")
	found := false
	for _, d := range tags.Diagnostics {
		if d.Code == "skill.comment-cut" {
			found = true
			if d.Line != 3 || d.Path != "skills/tags/SKILL.md" || !strings.Contains(d.Message, `"Fetch"`) {
				t.Errorf("diagnostic %v", d)
			}
		}
	}
	if !found {
		t.Errorf("no warning for the cut description: %v", tags.Diagnostics)
	}
	q, _ := set.Get("quoted")
	for _, d := range q.Diagnostics {
		if d.Code == "skill.comment-cut" {
			t.Errorf("a quoted value was warned about: %v", d)
		}
	}
	txt := md.String(set.Summary(PromptOptions{}))
	if strings.Contains(txt, "<description/>") || !strings.Contains(txt, "<description>bare</description>") {
		t.Errorf("a skill without a description must be described by its name:\n%s", txt)
	}
}

// Built-in skills are listed where the agent can read them: written once
// into .loom/builtin/, rewritten only when changed; inlined when the
// workspace is not a folder on disk.
func TestBuiltinSkillsHaveAReadableLocation(t *testing.T) {
	dir := t.TempDir()
	ws := openWS(t, dir)
	set := New(ws, Options{}).Load()
	sk, ok := set.Get("plan-task")
	if !ok {
		t.Fatal("no plan-task")
	}
	if sk.Location != ".loom/builtin/plan-task/SKILL.md" {
		t.Fatalf("location %q", sk.Location)
	}
	p := filepath.Join(dir, ".loom/builtin/plan-task/SKILL.md")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	embedded, _ := fs.ReadFile(builtinFS, "builtin/plan-task/SKILL.md")
	if string(data) != string(embedded) {
		t.Error("the written file differs from the built-in")
	}
	before, _ := os.Stat(p)
	New(openWS(t, dir), Options{}).Load() // a new process: unchanged file, no write
	after, _ := os.Stat(p)
	if !os.SameFile(before, after) {
		t.Error("an unchanged built-in file was written again")
	}
	if err := os.WriteFile(p, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	New(openWS(t, dir), Options{}).Load()
	if data, _ := os.ReadFile(p); string(data) != string(embedded) {
		t.Error("a changed built-in file was not restored")
	}

	// No file access: the text goes into the prompt.
	mem := New(workspace.OpenFS(fstest.MapFS{"AGENTS.md": {Data: []byte("x")}}), Options{}).Load()
	txt := md.String(mem.Summary(PromptOptions{}))
	if !strings.Contains(txt, "<content>") || strings.Contains(txt, "<location>builtin/") {
		t.Errorf("in-memory workspace:\n%s", txt)
	}
}

func TestBuiltinsOff(t *testing.T) {
	cfg, err := config.Parse("loom.yaml", []byte("skills:\n  builtin: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := FromConfig(cfg)
	set := load(t, map[string]string{"skills/mine/SKILL.md": skillMD("mine", "d")}, opts)
	if _, ok := set.Get("plan-task"); ok {
		t.Error("skills.builtin: false kept the built-in skills")
	}
	if _, ok := set.Get("mine"); !ok {
		t.Error("skills.builtin: false dropped the workspace's skills")
	}
}
