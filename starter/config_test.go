package starter

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/loomctx/loom/config"
)

// commentedKey matches a commented-out YAML key line such as "# name: Wren"
// or "#   total: 8000", and not prose comments.
var commentedKey = regexp.MustCompile(`^# (\s*[a-z_]+:(\s.*)?)$`)

// TestLoomYAMLParses checks each starter loom.yaml against loom's own config
// parser twice: as written, and with every commented-out key switched on, so
// that uncommenting a line never produces an unknown-key error.
func TestLoomYAMLParses(t *testing.T) {
	for _, preset := range Presets() {
		fsys, _ := Files(preset)
		b, err := fs.ReadFile(fsys, "loom.yaml")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(preset+"/loom.yaml", b)
		if err != nil {
			t.Errorf("as written: %v", err)
		} else if cfg.Preset != preset {
			t.Errorf("%s/loom.yaml: preset %q", preset, cfg.Preset)
		}

		lines := strings.Split(string(b), "\n")
		on := 0
		for i, line := range lines {
			if m := commentedKey.FindStringSubmatch(line); m != nil {
				lines[i] = m[1]
				on++
			}
		}
		if on < 5 {
			t.Errorf("%s/loom.yaml: only %d commented keys found; the pattern is stale", preset, on)
		}
		full := strings.Join(lines, "\n")
		cfg, err = config.Parse(preset+"/loom.yaml", []byte(full))
		if err != nil {
			t.Errorf("uncommented: %v\n%s", err, full)
			continue
		}
		if cfg.Name == "" || cfg.Emoji == "" || cfg.Timezone == "" || cfg.Budget.Total == 0 {
			t.Errorf("%s/loom.yaml uncommented: %+v", preset, cfg)
		}
	}
}
