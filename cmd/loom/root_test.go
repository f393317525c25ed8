package main

import (
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
		{[]string{"tokens", "a", "b", "c"}, 2, "at most one file"},
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
