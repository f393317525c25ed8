package skills

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/config"
)

// Class: paths. A workspace's loom.yaml cannot make loom read skills from
// a folder outside the workspace; the operator can allow one with
// LOOM_SKILLS_PATHS.
func TestLoomYAMLSkillsPathOutsideNeedsOperator(t *testing.T) {
	other := t.TempDir()
	writeFiles(t, other, map[string]string{"theirs/SKILL.md": skillMD("theirs", "another workspace's skill")})
	cfg, err := config.Parse("loom.yaml", []byte("skills:\n  builtin: false\n  paths: ["+other+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := FromConfig(cfg)
	opts.Getenv = func(string) string { return "" }
	set := load(t, map[string]string{"skills/mine/SKILL.md": skillMD("mine", "d")}, opts)
	if _, ok := set.Get("theirs"); ok {
		t.Error("loom.yaml pulled in a skill from outside the workspace")
	}
	found := false
	for _, d := range set.Diagnostics {
		if d.Code == "skills.path-outside" {
			found = true
		}
	}
	if !found {
		t.Errorf("no diagnostic for the refused path: %v", set.Diagnostics)
	}

	opts.Getenv = func(k string) string {
		if k == EnvSkillsPaths {
			return filepath.Dir(other) + string(os.PathListSeparator) + "/nowhere"
		}
		return ""
	}
	set = load(t, map[string]string{"skills/mine/SKILL.md": skillMD("mine", "d")}, opts)
	if _, ok := set.Get("theirs"); !ok {
		t.Errorf("the operator's allowed folder was refused: %v", set.Diagnostics)
	}

	// Options set in code (the operator's own) need no leave.
	set = load(t, nil, Options{Paths: []string{other}, NoBuiltins: true, Getenv: func(string) string { return "" }})
	if _, ok := set.Get("theirs"); !ok {
		t.Errorf("an operator path was refused: %v", set.Diagnostics)
	}
}
