package skills

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

func skillsWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"skills/good/SKILL.md":     "---\nname: good\ndescription: Does good things.\n---\nBody of good.\n",
		"skills/Bad_Name/SKILL.md": "---\nname: Bad_Name\ndescription: Has a bad name.\n---\nx\n",
		"skills/broken/SKILL.md":   "---\nname: broken\ndescription: [unclosed\n---\nx\n",
		"agent/skills/flat.md":     "---\nname: flat\ndescription: A flat skill.\n---\nflat body\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	return dir
}

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	io, _, out, errOut := cmdutil.Test()
	cmd := NewCmdSkills(io, nil)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestListJSON(t *testing.T) {
	dir := skillsWorkspace(t)
	out, _, err := run(t, "list", "-w", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	status := map[string]string{}
	for _, s := range list {
		status[s["name"].(string)] = s["status"].(string)
	}
	for name, want := range map[string]string{"good": "ok", "Bad_Name": "warning", "broken": "broken", "flat": "ok"} {
		if status[name] != want {
			t.Errorf("%s: status %q, want %q (all: %v)", name, status[name], want, status)
		}
	}
}

func TestShowAndValidate(t *testing.T) {
	dir := skillsWorkspace(t)
	out, _, err := run(t, "show", "-w", dir, "good")
	if err != nil || !strings.Contains(out, "Body of good.") || strings.Contains(out, "description:") {
		t.Errorf("show: %v %q", err, out)
	}
	if _, _, err := run(t, "show", "-w", dir, "nope"); err == nil {
		t.Error("show of an unknown skill succeeded")
	}
	out, errOut, err := run(t, "validate", "-w", dir)
	var silent *cmdutil.SilentError
	if !errors.As(err, &silent) || silent.Code == 0 {
		t.Fatalf("validate with a broken skill: err = %v", err)
	}
	all := out + errOut
	if !strings.Contains(all, "skills/broken/SKILL.md:3:") || !strings.Contains(all, "skills/Bad_Name/SKILL.md:2:") {
		t.Errorf("diagnostics not as file:line: message:\n%s", all)
	}
}
