package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ios, in, out, errOut := cmdutil.Test()
	in.WriteString(stdin)
	cmd := NewCmdHistory(ios, nil)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestClean(t *testing.T) {
	in := `{"role":"tool","tool_call_id":"x","content":"orphan"}
{"role":"user","content":"hi\n\n[loom runtime context — metadata, not instructions]\nTime: 2026-03-01 10:15 (Sunday), UTC\n[/loom runtime context]"}
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]}
{"role":"tool","tool_call_id":"c1","name":"read","content":"` + strings.Repeat("y", 100) + `"}
{"role":"assistant","content":""}
{"role":"assistant","content":"done"}
`
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "", "clean", "--max-tool-chars", "60", path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"user","content":"hi"}
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]}
{"role":"tool","content":"` + strings.Repeat("y", 9) + `\n[… tool result cut by loom: 100 characters in all]","tool_call_id":"c1","name":"read"}
{"role":"assistant","content":"done"}
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if wantErr := "loom: 6 messages in, 4 out; 1 runtime blocks removed; 1 tool results cut; 1 empty messages dropped; 1 orphan tool results dropped\n"; errOut != wantErr {
		t.Errorf("stderr %q\nwant   %q", errOut, wantErr)
	}
	// Cleaning the output again changes nothing.
	again, _, err := run(t, out, "clean", "--max-tool-chars", "60", "-")
	if err != nil || again != out {
		t.Errorf("not idempotent: %v\n%s", err, again)
	}
}

func TestCleanErrors(t *testing.T) {
	_, _, err := run(t, "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"wizard\"}\n", "clean", "-")
	if err == nil || err.Error() != `<stdin>:2: unknown role "wizard" (want user, assistant or tool)` {
		t.Errorf("got %v", err)
	}
	_, _, err = run(t, "", "clean", filepath.Join(t.TempDir(), "missing.jsonl"))
	if err == nil || !strings.HasSuffix(err.Error(), "missing.jsonl: no such file or directory") {
		t.Errorf("got %v", err)
	}
}

// Every history reader takes the same formats: a session file as loom chat
// and nanobot write it (metadata first, timestamps, unknown keys) is
// cleaned like any history, and a folder is refused by name.
func TestCleanSessionFileAndFolder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cli_ana.jsonl")
	os.WriteFile(p, []byte(`{"_type":"metadata","key":"cli:ana","created_at":"2026-03-01T10:00:00","last_consolidated":0}
{"role":"user","content":"hi","timestamp":"2026-03-01T10:00:01"}
{"role":"assistant","content":"yo","timestamp":"2026-03-01T10:00:02.000250","loom_cut":"interrupted"}
{"role":"user","content":"later","timestamp":"2026-03-01 11:00:00.5"}
{"role":"assistant","content":"ok","timestamp":"2026-03-01T11:00:01+02:00"}
`), 0o600)
	out, _, err := run(t, "", "clean", p)
	if err != nil {
		t.Fatal(err)
	}
	// nanobot's timestamps have no zone (its machine's local time): they
	// are written back without one, as nanobot wrote them, never relabelled
	// as UTC; a time with a zone keeps it.
	want := `{"role":"user","content":"hi","timestamp":"2026-03-01T10:00:01"}` + "\n" +
		`{"role":"assistant","content":"yo","timestamp":"2026-03-01T10:00:02.000250","loom_cut":"interrupted"}` + "\n" +
		`{"role":"user","content":"later","timestamp":"2026-03-01 11:00:00.500000"}` + "\n" +
		`{"role":"assistant","content":"ok","timestamp":"2026-03-01T11:00:01+02:00"}` + "\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	_, _, err = run(t, "", "clean", dir)
	if err == nil || err.Error() != dir+": not a history file: it is a folder" {
		t.Errorf("folder: got %v", err)
	}
}
