package examples

import (
	"os/exec"
	"slices"
	"testing"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// TestLoadConfig reads each example's loom.yaml with loom's own parser.
func TestLoadConfig(t *testing.T) {
	for _, name := range Names() {
		ws := workspace.OpenFS(mustFS(t, name))
		cfg, err := config.Load(ws)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if cfg.Preset != name || config.DetectPreset(ws) != name {
			t.Errorf("%s: preset %q, detected %q", name, cfg.Preset, config.DetectPreset(ws))
		}
	}
}

// TestSkillsLoad runs the skills loader on the examples with no binaries and
// no environment, so every requirement shows up as missing.
func TestSkillsLoad(t *testing.T) {
	opts := skills.Options{
		NoBuiltins: true,
		LookPath:   func(string) (string, error) { return "", exec.ErrNotFound },
		Getenv:     func(string) string { return "" },
		GOOS:       "linux",
	}
	want := map[string][]struct {
		name    string
		always  bool
		missing []string
	}{
		"assistant": {
			{"daily-notes", true, nil},
			{"todoist", false, []string{"CLI: curl", "ENV: TODOIST_API_TOKEN"}},
			{"weather-brief", false, []string{"CLI: curl"}},
		},
		"analyst": {
			{"revenue", false, nil},
		},
	}
	for _, name := range Names() {
		set := skills.New(workspace.OpenFS(mustFS(t, name)), opts).Load()
		for _, w := range want[name] {
			s, ok := set.Get(w.name)
			if !ok {
				t.Errorf("%s: skill %s not found", name, w.name)
				continue
			}
			if s.Status != skills.StatusOK || len(s.Diagnostics) > 0 {
				t.Errorf("%s/%s: status %s, diagnostics %v", name, s.Path, s.Status, s.Diagnostics)
			}
			if s.Always() != w.always {
				t.Errorf("%s/%s: always = %v, want %v", name, s.Path, s.Always(), w.always)
			}
			if !slices.Equal(s.Missing, w.missing) {
				t.Errorf("%s/%s: missing %q, want %q", name, s.Path, s.Missing, w.missing)
			}
		}
	}
}
