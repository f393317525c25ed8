package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

// A loom.yaml over the size limit is one error line, said once, on every
// command that reads it (#31: it was reported printed twice with no
// newline between). serve and inspect --web start and answer each request
// with the error instead; server and inspector tests cover those.
func TestTooLargeConfigSaidOnce(t *testing.T) {
	t.Setenv("LOOM_CACHE_DIR", t.TempDir())
	t.Setenv("LOOM_MEMORY_DB", "")
	dir := t.TempDir()
	big := "name: x\n# " + strings.Repeat("a", 1<<20) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "loom.yaml: file is too large (1048587 bytes; the limit is 1048576)"
	for _, args := range [][]string{
		{"render"}, {"render", "--json"}, {"render", "--report"}, {"inspect"}, {"inspect", "--json"},
		{"messages", "--message", "hi"}, {"messages", "--message", "hi", "--format", "json"},
		{"skills", "list"}, {"skills", "validate"}, {"skills", "show", "x"},
		{"memory", "list"}, {"memory", "add", "x"}, {"memory", "search", "x"}, {"memory", "export"}, {"memory", "forget", "m_1"},
		{"memory", "consolidate", "--history", filepath.Join(dir, "loom.yaml"), "--dry-run"},
		{"chat"}, {"mcp"}, {"watch"},
	} {
		ios, _, _, errOut := cmdutil.Test()
		code := runWith(ios, append(args, "-w", dir))
		got := errOut.String()
		if code != 1 || strings.Count(got, "loom.yaml") != 1 || got != "loom: "+want+"\n" {
			t.Errorf("loom %s: exit %d, stderr %q; want 1 and the one line %q", strings.Join(args, " "), code, got, "loom: "+want)
		}
	}
}
