package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loomctx/loom/memory"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

func TestNewCmdRender(t *testing.T) {
	io, _, _, _ := cmdutil.Test()
	var got *Options
	cmd := NewCmdRender(io, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"-w", "ws", "--budget", "8000", "--now", "2026-01-02T15:04:05Z", "--channel", "slack", "--format", "json", "--report"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Flags.Dir != "ws" || got.Flags.Budget != 8000 || got.Flags.Channel != "slack" || got.Format != "json" || !got.Report {
		t.Errorf("options %+v", got)
	}
	cmd = NewCmdRender(io, func(*Options) error { return nil })
	cmd.SetArgs([]string{"--format", "yaml"})
	if err := cmd.Execute(); err == nil {
		t.Error("--format yaml accepted")
	}
}

func run(t *testing.T, args ...string) (out, errOut string, err error) {
	t.Helper()
	io, _, o, e := cmdutil.Test()
	cmd := NewCmdRender(io, nil)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return o.String(), e.String(), err
}

func TestRenderExampleJSON(t *testing.T) {
	out, _, err := run(t, "--example", "analyst", "--now", "2026-03-10T15:00:00Z", "--format", "json", "--budget", "100000")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Prompt string `json:"prompt"`
		Report struct {
			Encoding string `json:"encoding"`
			Tokens   int    `json:"tokens"`
			Budget   *int   `json:"budget"`
			Sections []struct {
				Name     string   `json:"name"`
				Tokens   int      `json:"tokens"`
				Status   string   `json:"status"`
				Priority *int     `json:"priority"`
				Sources  []string `json:"sources"`
			} `json:"sections"`
			Diagnostics []struct {
				Severity, File, Message string
				Line                    int
			} `json:"diagnostics"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Prompt, "Tuesday, March 10, 2026") || v.Report.Encoding != "o200k_base" || v.Report.Tokens == 0 ||
		v.Report.Budget == nil || *v.Report.Budget != 100000 || len(v.Report.Sections) == 0 || v.Report.Diagnostics == nil {
		t.Errorf("json %+v", v.Report)
	}
	for _, s := range v.Report.Sections {
		if s.Sources == nil || (s.Status != "kept" && s.Status != "dropped" && s.Status != "truncated") {
			t.Errorf("section %+v", s)
		}
	}
}

func TestRenderReportAndErrors(t *testing.T) {
	out, errOut, err := run(t, "--example", "assistant", "--report")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "# Wren") || !strings.Contains(errOut, "SECTION") || !strings.Contains(errOut, "total: ") {
		t.Errorf("stdout %q…, stderr %q", out[:20], errOut)
	}
	if _, _, err := run(t, "-w", t.TempDir()+"/missing"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing folder: %v", err)
	}
	for _, args := range [][]string{{"--budget", "0"}, {"--budget", "-3"}, {"--encoding", "o200k_base", "--model", "gpt-4o"}, {"--now", "yesterday"}} {
		if _, _, err := run(t, args...); err == nil {
			t.Errorf("%v accepted", args)
		} else if _, ok := err.(*cmdutil.FlagError); !ok {
			t.Errorf("%v: %v is not a usage error", args, err)
		}
	}
}

func writeWS(t *testing.T, files map[string]string) string {
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

// Each warning reaches stderr once, with or without --report, and memories
// left out for one reason share one row of the table.
func TestWarningsOnceAndMemoriesFolded(t *testing.T) {
	dir := writeWS(t, map[string]string{
		"AGENTS.md":           "Be kind.\n",
		"skills/odd/SKILL.md": "---\nname: odd\n---\nNo description here.\n",
	})
	store, err := memory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var mems []memory.NewMemory
	for i := range 60 {
		mems = append(mems, memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("Remembered fact number %d about the user's habits and projects.", i)})
	}
	if _, err := store.Add(context.Background(), mems...); err != nil {
		t.Fatal(err)
	}
	store.Close()
	for _, args := range [][]string{{"-w", dir}, {"-w", dir, "--report"}} {
		_, errOut, err := run(t, append(args, "--memory-budget", "100")...)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(errOut, "description is missing"); n != 1 {
			t.Errorf("%v: the warning is printed %d times:\n%s", args, n, errOut)
		}
		if len(args) == 3 {
			if !regexp.MustCompile(`(?m)^\d+ memories .*did not fit the memory budget`).MatchString(errOut) {
				t.Errorf("no folded memory row:\n%s", errOut)
			}
			if n := len(regexp.MustCompile(`(?m)^memory/\S+ .*dropped`).FindAllString(errOut, -1)); n > 0 {
				t.Errorf("%d rows for single memories:\n%s", n, errOut)
			}
		}
	}
	out, _, err := run(t, "-w", dir, "--memory-budget", "100", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "description is missing"); n != 1 {
		t.Errorf("the JSON report holds the warning %d times", n)
	}
	if n := strings.Count(out, `"name": "memory/`); n < 40 {
		t.Errorf("the JSON report has %d memory entries, want one per memory", n)
	}
}

// A bad flag value is a usage error (exit 2), the same in every command.
func TestBadFlagValuesAreUsageErrors(t *testing.T) {
	dir := writeWS(t, map[string]string{"AGENTS.md": "Hi.\n"})
	for _, args := range [][]string{{"--encoding", "bogus"}, {"--tz", "Mars/Olympus"}} {
		_, _, err := run(t, append([]string{"-w", dir}, args...)...)
		var fe *cmdutil.FlagError
		if !errors.As(err, &fe) {
			t.Errorf("%v: error %v (%T), want a usage error", args, err, err)
		} else if !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: the error does not name the flag: %v", args, err)
		}
	}
}
