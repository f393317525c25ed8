package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

// The README promises exit status 2 for a usage error.
func TestUsageErrorsExit2(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"bogus"}, 2, `unknown command "bogus" for "loom"`},
		{[]string{"rendr"}, 2, "did you mean render?"},
		{[]string{"memory", "frob"}, 2, `unknown command "frob" for "loom memory"`},
		{[]string{"render", "--no-such-flag"}, 2, "unknown flag: --no-such-flag"},
		{[]string{"messages", "--encoding", "bogus", "--message", "hi"}, 2, "--encoding must be one of"},
		{[]string{"render", "--encoding", "bogus"}, 2, "--encoding must be one of"},
		{[]string{"tokens", "a", "b", "c"}, 2, "at most one file"},
		{[]string{"render", "-w", ".", "--example", "assistant"}, 2, "-w and --example cannot be used together"},
		{[]string{"skills", "list", "-w", ".", "--example", "assistant"}, 2, "-w and --example cannot be used together"},
		{[]string{"serve", "--root", ".", "--example", "assistant"}, 2, "--root and --example cannot be used together"},
		{[]string{"render", "--example", "coder"}, 2, `loom: unknown example "coder" (valid: analyst, assistant)`},
		{[]string{"chat", "--example", "coder"}, 2, `loom: unknown example "coder" (valid: analyst, assistant)`},
		{[]string{"tokens", "--example", "coder", "AGENTS.md"}, 2, `loom: unknown example "coder" (valid: analyst, assistant)`},
		{[]string{"help", "bogus"}, 2, `unknown help topic "bogus"`},
		{[]string{"help", "memory", "frob"}, 2, `unknown help topic "memory frob"`},
		{[]string{"help", "memory", "list"}, 0, ""},
		{[]string{"--version"}, 0, ""},
		{[]string{"memory"}, 0, ""},
		{[]string{"tokens", t.TempDir()}, 1, "is a folder"},
	} {
		ios, _, _, errOut := cmdutil.Test()
		code := runWith(ios, tt.args)
		if code != tt.code || !strings.Contains(errOut.String(), tt.msg) {
			t.Errorf("loom %s: exit %d, stderr %q; want %d and %q", strings.Join(tt.args, " "), code, errOut, tt.code, tt.msg)
		}
	}
}

// loom.yaml cannot send the memory database outside the workspace; the
// operator can, with --memory-db, and every command then uses that file.
func TestMemoryDBOperatorOnly(t *testing.T) {
	t.Setenv("LOOM_MEMORY_DB", "")
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "elsewhere.db")
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte("name: x\nmemory:\n  db: "+outside+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"render", "-w", dir}, {"memory", "list", "-w", dir}, {"memory", "add", "-w", dir, "x"}} {
		ios, _, _, errOut := cmdutil.Test()
		if code := runWith(ios, args); code != 1 || !strings.Contains(errOut.String(), "loom.yaml:3: memory.db: ") {
			t.Errorf("loom %s: exit %d, %s", args[0], code, errOut)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("a database was created where loom.yaml said")
	}

	os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte("name: x\n"), 0o644)
	ios, _, _, errOut := cmdutil.Test()
	if code := runWith(ios, []string{"memory", "add", "-w", dir, "--memory-db", outside, "Likes <tea>"}); code != 0 {
		t.Fatalf("memory add --memory-db: %d %s", code, errOut)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("--memory-db file not created: %v", err)
	}
	// The same file through the environment, for a command that only reads.
	t.Setenv("LOOM_MEMORY_DB", outside)
	ios, _, out, errOut := cmdutil.Test()
	if code := runWith(ios, []string{"render", "-w", dir}); code != 0 || !strings.Contains(out.String(), "Likes <tea>") {
		t.Errorf("render with LOOM_MEMORY_DB: exit %d, memory not in the prompt; stderr %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, ".loom", "memory.db")); err == nil {
		t.Error("a database was created inside the workspace too")
	}
}

// A run builds only the command it runs; help, a mistyped command and
// completion need them all, and --version none.
func TestNeededCommands(t *testing.T) {
	for _, tt := range []struct {
		args []string
		name string
		all  bool
	}{
		{nil, "", true},
		{[]string{"--version"}, "", false},
		{[]string{"-v"}, "", false},
		{[]string{"--memory-db", "x.db", "--version"}, "", false},
		{[]string{"render", "-w", "dir"}, "render", false},
		{[]string{"--memory-db", "render", "memory", "list"}, "memory", false},
		{[]string{"--memory-db=x.db", "render"}, "render", false},
		{[]string{"--help"}, "", true},
		{[]string{"-h", "render"}, "", true},
		{[]string{"help", "render"}, "", true},
		{[]string{"rendr"}, "", true},
		{[]string{"completion", "bash"}, "", true},
		{[]string{"--", "render"}, "", true},
	} {
		name, all := needed(tt.args)
		if name != tt.name || all != tt.all {
			t.Errorf("needed(%q) = %q, %v; want %q, %v", tt.args, name, all, tt.name, tt.all)
		}
	}
	// every command is reachable by its name, and is the command of that name
	for _, c := range commands {
		root := newRootCmd(cmdutil.System(), []string{c.name})
		var names []string
		for _, sub := range root.Commands() {
			names = append(names, sub.Name())
		}
		if len(names) != 1 || names[0] != c.name {
			t.Errorf("loom %s builds the commands %q", c.name, names)
		}
	}
}
