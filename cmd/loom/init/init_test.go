package initcmd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

func TestNewCmdInit(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    InitOptions
		wantErr string // substring of a usage error
	}{
		{name: "defaults", args: nil, want: InitOptions{Dir: ".", Preset: "assistant"}},
		{name: "folder", args: []string{"my-agent"}, want: InitOptions{Dir: "my-agent", Preset: "assistant"}},
		{name: "analyst", args: []string{"wh", "--preset", "analyst"}, want: InitOptions{Dir: "wh", Preset: "analyst"}},
		{name: "flag first", args: []string{"--preset=assistant", "x"}, want: InitOptions{Dir: "x", Preset: "assistant"}},
		{name: "unknown preset", args: []string{"--preset", "coder"}, wantErr: `unknown preset "coder" (valid: analyst, assistant)`},
		{name: "two folders", args: []string{"a", "b"}, wantErr: "at most one folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, stdout, stderr := cmdutil.Test()
			var got *InitOptions
			cmd := NewCmdInit(ios, func(o *InitOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(stdout)
			cmd.SetErr(stderr)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				var fe *cmdutil.FlagError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a usage error containing %q", err, tt.wantErr)
				}
				if got != nil {
					t.Error("run function called despite the usage error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Dir != tt.want.Dir || got.Preset != tt.want.Preset {
				t.Errorf("options = {Dir:%q Preset:%q}, want {Dir:%q Preset:%q}", got.Dir, got.Preset, tt.want.Dir, tt.want.Preset)
			}
		})
	}
}

func TestInitRunCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	ios, _, stdout, stderr := cmdutil.Test()
	if err := initRun(&InitOptions{IO: ios, Dir: dir, Preset: "assistant"}); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, rel := range []string{
		"AGENTS.md", "SOUL.md", "TOOLS.md", "USER.md", "loom.yaml",
		"memory/HISTORY.md", "memory/MEMORY.md", "skills/.keep",
	} {
		want.WriteString("created " + filepath.Join(dir, filepath.FromSlash(rel)) + "\n")
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
			t.Errorf("%s not written: %v", rel, err)
		}
	}
	if stdout.String() != want.String() {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want.String())
	}
	if wantErr := "next: loom render -w " + dir + "\n"; stderr.String() != wantErr {
		t.Errorf("stderr = %q, want %q", stderr, wantErr)
	}
}

func TestInitRunAnalystInCurrentFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	ios, _, stdout, stderr := cmdutil.Test()
	if err := initRun(&InitOptions{IO: ios, Dir: ".", Preset: "analyst"}); err != nil {
		t.Fatal(err)
	}
	want := "created RULES.md\n" +
		"created " + filepath.FromSlash("agent/prompts/README.md") + "\n" +
		"created " + filepath.FromSlash("agent/skills/example-skill.md") + "\n" +
		"created " + filepath.FromSlash("databases/README.md") + "\n" +
		"created loom.yaml\n"
	if stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if stderr.String() != "next: loom render -w .\n" {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestInitRunNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	soul := filepath.Join(dir, "SOUL.md")
	mine := "# Soul\n\nMy own words.\n"
	if err := os.WriteFile(soul, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	ios, _, stdout, stderr := cmdutil.Test()
	if err := initRun(&InitOptions{IO: ios, Dir: dir, Preset: "assistant"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(soul)
	if err != nil || string(got) != mine {
		t.Errorf("SOUL.md = %q (err %v), want it unchanged", got, err)
	}
	if strings.Contains(stdout.String(), "SOUL.md") {
		t.Errorf("stdout reports SOUL.md as created:\n%s", stdout)
	}
	if !strings.Contains(stdout.String(), "created "+filepath.Join(dir, "AGENTS.md")+"\n") {
		t.Errorf("stdout does not report AGENTS.md:\n%s", stdout)
	}
	if want := "skipped " + soul + " (exists)\n"; !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr = %q, want it to start with %q", stderr, want)
	}

	// Running again writes nothing and skips all eight files.
	ios, _, stdout, stderr = cmdutil.Test()
	if err := initRun(&InitOptions{IO: ios, Dir: dir, Preset: "assistant"}); err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 {
		t.Errorf("second run created files:\n%s", stdout)
	}
	if n := strings.Count(stderr.String(), " (exists)\n"); n != 8 {
		t.Errorf("second run skipped %d files, want 8:\n%s", n, stderr)
	}
}

func TestInitRunFolderIsAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ios, _, stdout, _ := cmdutil.Test()
	err := initRun(&InitOptions{IO: ios, Dir: path, Preset: "assistant"})
	if err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("err = %v, want an error naming notes.txt", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		".":            ".",
		"my-agent":     "my-agent",
		"/tmp/ws_1":    "/tmp/ws_1",
		"my agent":     "'my agent'",
		"it's":         `'it'\''s'`,
		"$HOME/x":      "'$HOME/x'",
		"":             "''",
		"type=pg/db=x": "type=pg/db=x",
		"a;rm -rf ~":   "'a;rm -rf ~'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
