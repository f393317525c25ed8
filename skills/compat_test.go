package skills

import (
	"crypto/sha256"
	"encoding/hex"
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

// Built-in skills are listed where the agent can read them, outside the
// workspace: written once into the cache folder (under a folder named by
// their text's hash), rewritten only when changed; inlined when the
// workspace is not a folder on disk or the cache cannot be written.
// Loading never writes into the workspace, even a read-only one.
func TestBuiltinSkillsHaveAReadableLocation(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	if err := os.Chmod(dir, 0o555); err != nil { // a read-only workspace loads too
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	ws := openWS(t, dir)
	set := New(ws, Options{CacheDir: cache}).Load()
	sk, ok := set.Get("plan-task")
	if !ok {
		t.Fatal("no plan-task")
	}
	if len(sk.Diagnostics) != 0 || sk.Inline {
		t.Fatalf("diagnostics %v, inline %v", sk.Diagnostics, sk.Inline)
	}
	embedded, _ := fs.ReadFile(builtinFS, "builtin/plan-task/SKILL.md")
	sum := sha256.Sum256(embedded)
	want := filepath.Join(cache, "builtin", hex.EncodeToString(sum[:6]), "plan-task", "SKILL.md")
	if sk.Location != want {
		t.Fatalf("location %q, want %q", sk.Location, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("loading wrote into the workspace: %v", entries)
	}
	p := sk.Location
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(embedded) {
		t.Error("the written file differs from the built-in")
	}
	before, _ := os.Stat(p)
	New(openWS(t, dir), Options{CacheDir: cache}).Load() // a new process: unchanged file, no write
	after, _ := os.Stat(p)
	if !os.SameFile(before, after) {
		t.Error("an unchanged built-in file was written again")
	}
	if err := os.WriteFile(p, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	New(openWS(t, dir), Options{CacheDir: cache}).Load()
	if data, _ := os.ReadFile(p); string(data) != string(embedded) {
		t.Error("a changed built-in file was not restored")
	}

	// $LOOM_CACHE_DIR is the default when the option is empty.
	envCache := t.TempDir()
	getenv := func(k string) string {
		if k == EnvCacheDir {
			return envCache
		}
		return os.Getenv(k)
	}
	viaEnv, _ := New(openWS(t, dir), Options{Getenv: getenv}).Load().Get("plan-task")
	if !strings.HasPrefix(viaEnv.Location, envCache+string(filepath.Separator)) {
		t.Errorf("with $%s set, location %q", EnvCacheDir, viaEnv.Location)
	}

	// A cache that cannot be written: the text goes into the prompt, with a warning.
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := New(openWS(t, dir), Options{CacheDir: blocked}).Load().Get("plan-task")
	if !in.Inline || len(in.Diagnostics) != 1 || !strings.Contains(in.Diagnostics[0].Message, EnvCacheDir) {
		t.Errorf("unwritable cache: inline %v, diagnostics %v", in.Inline, in.Diagnostics)
	}

	// No file access: the text goes into the prompt.
	mem := New(workspace.OpenFS(fstest.MapFS{"AGENTS.md": {Data: []byte("x")}}), Options{CacheDir: cache}).Load()
	txt := md.String(mem.Summary(PromptOptions{}))
	if !strings.Contains(txt, "<content>") || strings.Contains(txt, "<location>") {
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
