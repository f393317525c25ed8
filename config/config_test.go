package config

import (
	"errors"
	"github.com/loomctx/loom/workspace"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, text string) (*Config, error) {
	t.Helper()
	return Parse("loom.yaml", []byte(text))
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "name: Ledger\nemoji: x\n\n# budget below\nbudgt: 3\n", `loom.yaml:5: unknown field "budgt"`},
		{"unknown nested key", "memory:\n  budget: 10\n  categories:\n    - name: a\n      lable: A\n", `loom.yaml:5: unknown field "lable"`},
		{"string for int", "budget:\n  total: lots\n", `loom.yaml:2: budget.total: expected a whole number, got a string`},
		{"float for int", "budget:\n  total: 1.5\n", `loom.yaml:2: budget.total: expected a whole number, got 1.5`},
		{"mapping for string", "name:\n  first: a\n", `loom.yaml:1: name: expected a string, got a mapping`},
		{"list for string", "name: [a, b]\n", `loom.yaml:1: name: expected a string, got a list`},
		{"string for list", "\ndisable: memory\n", `loom.yaml:2: disable: expected a list, got a string`},
		{"yes is not a bool", "memory:\n  exclude_current_chat: yes\n", `loom.yaml:2: memory.exclude_current_chat: expected true or false, got a string`},
		{"bad preset", "name: x\npreset: coder\n", `loom.yaml:2: preset: "coder" is not one of assistant, analyst`},
		{"bad encoding", "encoding: p50k\n", `loom.yaml:1: encoding: "p50k" is not one of o200k_base, cl100k_base, chars4`},
		{"zero budget", "budget:\n  total: 0\n", `loom.yaml:2: budget.total: must be a positive number, got 0`},
		{"negative section budget", "budget:\n  sections:\n    skills: 10\n    memory: -5\n", `loom.yaml:4: budget.sections.memory: must be a positive number, got -5`},
		{"bad section key", "budget:\n  sections:\n    Memory: 5\n", `loom.yaml:3: budget.sections.Memory: "Memory" is not a section name (lowercase letters, digits, _ and -)`},
		{"bad disable name", "disable:\n  - memory\n  - Skills List\n", `loom.yaml:3: disable[1]: "Skills List" is not a section name (lowercase letters, digits, _ and -)`},
		{"bare number duration", "skills:\n  debounce: 300\n", `loom.yaml:2: skills.debounce: expected a duration such as "300ms", got a number`},
		{"bad duration", "skills:\n  debounce: 3 seconds\n", `loom.yaml:2: skills.debounce: invalid duration "3 seconds" (write it like "300ms" or "2s")`},
		{"negative duration", "llm:\n  timeout: -1s\n", `loom.yaml:2: llm.timeout: duration "-1s" is negative`},
		{"zero timeout", "llm:\n  timeout: 0s\n", `loom.yaml:2: llm.timeout: must be longer than 0s`},
		{"bad placement", "runtime:\n  placement: middle\n", `loom.yaml:2: runtime.placement: "middle" is not one of before, after`},
		{"bad provider", "llm:\n  provider: gemini\n", `loom.yaml:2: llm.provider: "gemini" is not one of openai, anthropic`},
		{"bad url", "llm:\n  base_url: api.openai.com\n", `loom.yaml:2: llm.base_url: "api.openai.com" is not an http or https URL`},
		{"bad env name", "llm:\n  api_key_env: $KEY\n", `loom.yaml:2: llm.api_key_env: "$KEY" is not an environment variable name`},
		{"windows skills path", "skills:\n  paths: [ok, 'C:\\skills']\n", `loom.yaml:2: skills.paths[1]: "C:\\skills" is a Windows path; use a path relative to the workspace or an absolute one`},
		{"escaping skills path", "skills:\n  paths:\n    - ../other\n", `loom.yaml:3: skills.paths[0]: "../other" climbs out of the workspace; name the folder by its absolute path instead`},
		{"duplicate category", "memory:\n  categories:\n    - {name: a, label: A}\n    - {name: a, label: B}\n", `loom.yaml:4: memory.categories[1].name: category "a" is listed twice`},
		{"unlabelled category", "memory:\n  categories:\n    - name: a\n", `loom.yaml:3: memory.categories[0].label: category "a" needs a label`},
		{"zero max size", "max_file_size: 0\n", `loom.yaml:1: max_file_size: must be a positive number, got 0`},
		{"not a mapping", "- a\n- b\n", `loom.yaml:1: expected a mapping of settings, got a list`},
		{"two documents", "name: a\n---\nname: b\n", `loom.yaml:3: more than one YAML document`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.yaml)
			if err == nil {
				t.Fatalf("no error; want %s", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error is %T, want *Error", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

// Syntax errors come from the YAML parser; only their shape is loom's.
func TestConfigSyntaxError(t *testing.T) {
	for _, text := range []string{"name: a\nname: b\n", "a: b: c\n", "name: [a\n", "\tname: a\n"} {
		_, err := parse(t, text)
		if err == nil {
			t.Errorf("%q: no error", text)
			continue
		}
		if !strings.HasPrefix(err.Error(), "loom.yaml:") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %q is not one line starting with loom.yaml:", text, err)
		}
	}
}

func TestConfigEmpty(t *testing.T) {
	for _, text := range []string{"", "# only a comment\n", "---\n", "\n\n"} {
		c, err := parse(t, text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		assertDefaults(t, c)
	}
}

func assertDefaults(t *testing.T, c *Config) {
	t.Helper()
	if c.MaxFileSize != workspace.DefaultMaxFileSize || c.Memory.Budget != 1000 || c.Skills.Debounce.Std() != 300*time.Millisecond ||
		c.LLM.Timeout.Std() != time.Minute || c.Runtime.Placement != "after" || c.Budget.Total != 0 {
		t.Errorf("defaults not kept: %+v", c)
	}
	if c.Skills.UsesAbsolutePaths() || !c.Memory.ExcludesCurrentChat() || c.LLM.Extraction.Enabled != nil || c.LLM.Consolidation.Enabled != nil {
		t.Errorf("unset booleans do not give their defaults")
	}
}

func TestConfigUnsetDiffersFromFalse(t *testing.T) {
	c, err := parse(t, "llm:\n  provider: openai\n  extraction:\n    enabled: false\nmemory:\n  exclude_current_chat: false\n")
	if err != nil {
		t.Fatal(err)
	}
	// Whether an unset setting turns on is llm.Enabled's call (it also
	// counts an endpoint from LOOM_LLM_*); here only unset vs false matters.
	if e := c.LLM.Extraction.Enabled; e == nil || *e {
		t.Error("extraction.enabled: false is ignored")
	}
	if c.LLM.Consolidation.Enabled != nil {
		t.Error("consolidation.enabled was not set but reads as set")
	}
	if c.Memory.ExcludesCurrentChat() {
		t.Error("exclude_current_chat: false is ignored")
	}
	// Debounce 0s is a real value, not "unset".
	c, err = parse(t, "skills:\n  debounce: 0s\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Skills.Debounce != 0 {
		t.Errorf("debounce 0s became %v", c.Skills.Debounce)
	}
}

func TestConfigFullExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "config", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("loom.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	want := &Config{
		Name:        "Ledger",
		Description: "A bookkeeping assistant for a small shop.",
		Emoji:       "📒",
		Preset:      "analyst",
		Encoding:    "cl100k_base",
		Model:       "gpt-4o",
		Budget:      Budget{Total: 12000, Sections: map[string]int{"memory": 800, "skills": 2000}},
		Timezone:    "Europe/Paris",
		Disable:     []string{"citations", "charts"},
		Runtime: Runtime{
			Policy:    RuntimePolicy{Windows: "Use PowerShell commands; GNU tools may be missing.", POSIX: "Prefer standard shell tools and UTF-8."},
			Placement: "after",
		},
		Tools:       []string{"execute_sql", "read", "grep", "clarification"},
		MaxFileSize: 524288,
		Skills:      SkillsConfig{Paths: []string{"shared/skills"}, AbsolutePaths: &yes, Debounce: Duration(250 * time.Millisecond)},
		Memory: MemoryConfig{
			Budget:             600,
			Categories:         []MemoryCategory{{"global_rule", "Global User Rules"}, {"personal_fact", "User Profile"}},
			ExcludeCurrentChat: &no,
			DB:                 "memory/loom.db",
		},
		Overrides: OverridesConfig{Keep: []string{"rules", "memory"}},
		LLM: LLMConfig{
			Provider:      "anthropic",
			BaseURL:       "https://api.anthropic.com",
			Model:         "claude-sonnet-4-5",
			APIKeyEnv:     "LOOM_ANTHROPIC_KEY",
			Timeout:       Duration(45 * time.Second),
			Extraction:    ExtractionConfig{Enabled: &yes, IncludeAssistant: &no},
			Consolidation: ConsolidationConfig{Enabled: &no, ThresholdTokens: 6000},
			ContextWindow: 200000,
			ReserveOutput: 8000,
		},
		Gateway: GatewayConfig{ClientSystem: "append", Models: map[string]ModelEntry{
			"claude-sonnet-4-5": {Model: "gpt-4.1"},
			"local-llama":       {ContextWindow: 32768, ReserveOutput: 2048},
		}},
		File: "loom.yaml",
	}
	if got.Line("budget.sections.skills") != 26 || got.Line("disable[1]") != 35 || got.Line("preset") != 12 || got.Line("nope") != 0 {
		t.Errorf("Line: budget.sections.skills=%d disable[1]=%d preset=%d", got.Line("budget.sections.skills"), got.Line("disable[1]"), got.Line("preset"))
	}
	got.lines = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("full.yaml decoded as\n%+v\nwant\n%+v", got, want)
	}
}

func TestLoadConfigThroughWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(ws)
	if err != nil {
		t.Fatalf("missing loom.yaml: %v", err)
	}
	assertDefaults(t, c)
	if c.Preset != PresetAssistant || c.File != "" {
		t.Errorf("empty workspace: preset %q file %q", c.Preset, c.File)
	}

	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("RULES.md", "rules\n")
	write("loom.yaml", "\xEF\xBB\xBFname: Ledger\r\n")
	c, err = Load(ws)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "Ledger" || c.Preset != PresetAnalyst || c.File != "loom.yaml" {
		t.Errorf("got name %q preset %q file %q", c.Name, c.Preset, c.File)
	}
	write("loom.yaml", "name: Ledger\npreset: assistant\n")
	if c, err = Load(ws); err != nil || c.Preset != PresetAssistant {
		t.Errorf("explicit preset: %v, %v", c, err)
	}
	write("loom.yaml", "name: Ledger\nbudgt: 1\n")
	if _, err = Load(ws); err == nil || err.Error() != `loom.yaml:2: unknown field "budgt"` {
		t.Errorf("got %v", err)
	}
	write("loom.yaml", "name: \x00\n")
	if _, err = Load(ws); err == nil || err.Error() != "loom.yaml: binary file (contains a NUL byte)" {
		t.Errorf("binary loom.yaml: got %v", err)
	}
}

func TestLoadConfigOutside(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "loom.yaml")
	if err := os.WriteFile(outside, []byte("name: stolen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "loom.yaml")); err != nil {
		t.Skip("no symlinks:", err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(ws)
	if err == nil || !strings.HasPrefix(err.Error(), "loom.yaml: resolves outside the workspace") {
		t.Errorf("got %v", err)
	}
}

func TestDetectPreset(t *testing.T) {
	for _, mark := range []string{"databases", "agent"} {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, mark), 0o755); err != nil {
			t.Fatal(err)
		}
		ws, _ := workspace.Open(dir)
		if got := DetectPreset(ws); got != PresetAnalyst {
			t.Errorf("%s/: got %s", mark, got)
		}
	}
	// A file named databases is not a connections folder.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "databases"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ws, _ := workspace.Open(dir)
	if got := DetectPreset(ws); got != PresetAssistant {
		t.Errorf("file databases: got %s", got)
	}
}

// The real sample workspaces (testdata/workspaces) have no loom.yaml: they render with defaults
// and the preset their layout implies.
func TestConfigSampleWorkspaces(t *testing.T) {
	root := filepath.Join("..", "testdata", "workspaces")
	for _, tt := range []struct{ dir, preset string }{
		{"nanobot", PresetAssistant},
		{"nao/getnao-example", PresetAnalyst},
		{"nao/nao_demo-example", PresetAnalyst},
	} {
		ws, err := workspace.Open(filepath.Join(root, tt.dir))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Load(ws)
		if err != nil {
			t.Fatalf("%s: %v", tt.dir, err)
		}
		assertDefaults(t, c)
		if c.Preset != tt.preset || c.File != "" {
			t.Errorf("%s: preset %q file %q, want %q and no file", tt.dir, c.Preset, c.File, tt.preset)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	data, _ := os.ReadFile(filepath.Join("testdata", "config", "full.yaml"))
	f.Add(string(data))
	f.Add("budget: {total: 1}\n")
	f.Add("a: [")
	f.Add("tools: !x\n")
	f.Add("x: &a [1]\nname: *a\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse("loom.yaml", []byte(text))
		if err == nil && c == nil {
			t.Fatal("nil config without an error")
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}

func TestAbsoluteSkillsPathIsAllowed(t *testing.T) {
	c, err := Parse("loom.yaml", []byte("skills:\n  paths: [/opt/team-skills, extra]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skills.Paths) != 2 || c.Skills.Paths[0] != "/opt/team-skills" {
		t.Errorf("paths %v", c.Skills.Paths)
	}
}

func TestWindowPerModel(t *testing.T) {
	c, err := Parse("loom.yaml", []byte("llm:\n  context_window: 8000\ngateway:\n  models:\n    small: {context_window: 4000}\n    roomy: {reserve_output: 1000}\n    alias: gpt-4o\n"))
	if err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string][2]int{"small": {4000, 4096}, "roomy": {8000, 1000}, "alias": {8000, 4096}, "other": {8000, 4096}} {
		if w, r := c.Window(model); w != want[0] || r != want[1] {
			t.Errorf("Window(%q) = %d, %d; want %d, %d", model, w, r, want[0], want[1])
		}
	}
	if c.Gateway.Models["alias"].Model != "gpt-4o" {
		t.Errorf("the short form gave %+v", c.Gateway.Models["alias"])
	}
	if w, r := Default().Window("gpt-4o"); w != 0 || r != DefaultReserveOutput {
		t.Errorf("defaults: window %d reserve %d, want 0 and %d", w, r, DefaultReserveOutput)
	}
	for text, want := range map[string]string{
		"llm:\n  context_window: 0\n":                             "loom.yaml:2: llm.context_window: must be a positive number, got 0",
		"llm:\n  context_window: 4000\n  reserve_output: 4000\n":  "loom.yaml:3: llm.reserve_output: 4000 leaves no room for the prompt in the 4000-token llm.context_window",
		"gateway:\n  models:\n    m:\n      context_window: -1\n": "loom.yaml:4: gateway.models.m.context_window: must be a positive number, got -1",
		"gateway:\n  models:\n    m: [1]\n":                       "loom.yaml:3: gateway.models.m: expected a mapping, got a list",
		"gateway:\n  models:\n    m: \"\"\n":                      "loom.yaml:3: gateway.models.m.model: must not be empty",
		"gateway:\n  models:\n    m: {windo: 3}\n":                `loom.yaml:3: unknown field "windo"`,
	} {
		_, err := Parse("loom.yaml", []byte(text))
		if err == nil || err.Error() != want {
			t.Errorf("%q: err = %v, want %s", text, err, want)
		}
	}
}

func TestGatewayUpstreamModel(t *testing.T) {
	cfg, err := parse(t, "gateway:\n  models:\n    claude-sonnet-4-5: gpt-4.1\n    gpt-4o-mini-local: {context_window: 4000}\n")
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Gateway
	for _, tt := range []struct{ client, configured, want string }{
		{"claude-sonnet-4-5", "gpt-4o-mini", "gpt-4.1"},      // the alias wins over llm.model
		{"gpt-4o", "gpt-4o-mini", "gpt-4o-mini"},             // llm.model applies
		{"gpt-4o", "", "gpt-4o"},                             // nothing configured: as sent
		{"gpt-4o-mini-local", "gpt-4o", "gpt-4o-mini-local"}, // listed without a model: its own name
		{"", "", ""},
	} {
		if got := g.UpstreamModel(tt.client, tt.configured); got != tt.want {
			t.Errorf("UpstreamModel(%q, %q) = %q, want %q", tt.client, tt.configured, got, tt.want)
		}
	}
}
