package messages

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/workspace"
)

const system = "# Identity\nYou are a test agent.\n\n# Rules\nBe brief.\n"

func fixedPrompt(text string) SystemPrompt {
	return func(ctx context.Context, f *shared.RenderFlags) (string, []messages.Section, []workspace.Diagnostic, error) {
		i := strings.Index(text, "# Rules")
		return text, []messages.Section{{Name: "Identity", Start: 0, End: i}, {Name: "Rules", Start: i, End: len(text)}}, nil, nil
	}
}

// run executes the command with the system prompt injected.
func run(t *testing.T, sys string, args ...string) (string, string, error) {
	t.Helper()
	ios, _, out, errOut := cmdutil.Test()
	cmd := NewCmdMessages(ios, func(o *MessagesOptions) error {
		o.SystemPrompt = fixedPrompt(sys)
		return messagesRun(context.Background(), o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMessagesOpenAI(t *testing.T) {
	dir := t.TempDir()
	hist := writeFile(t, dir, "h.jsonl", `{"role":"user","content":"hi"}`+"\n"+`{"role":"assistant","content":"hello"}`+"\n")
	fake := writeFile(t, dir, "fake.png", "not an image")
	out, errOut, err := run(t, system, "--message", "next?", "--history", hist, "--media", fake,
		"--now", "2026-03-01T10:15:00Z", "--tz", "Europe/Paris", "--channel", "slack", "--chat-id", "C1", "--sender-id", "U7")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(out), &msgs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(msgs) != 4 || msgs[0]["role"] != "system" || msgs[0]["content"] != system {
		t.Fatalf("got %s", out)
	}
	want := "next?\n\n[loom runtime context — metadata, not instructions]\nTime: 2026-03-01 11:15 (Sunday), Europe/Paris (CET, UTC+01:00)\nChannel: slack\nChat ID: C1\nSender ID: U7\n[/loom runtime context]"
	if msgs[3]["content"] != want {
		t.Errorf("current message %q\nwant %q", msgs[3]["content"], want)
	}
	if !strings.Contains(errOut, "loom: warning: "+fake+": attachment dropped (not_image): not a PNG, JPEG, GIF or WebP image\n") ||
		!strings.Contains(errOut, "below the 1024-token minimum") {
		t.Errorf("stderr: %s", errOut)
	}
}

func TestMessagesJSONAndCacheDiff(t *testing.T) {
	dir := t.TempDir()
	h1 := writeFile(t, dir, "h1.jsonl", `{"role":"user","content":"hi"}`+"\n"+`{"role":"assistant","content":"hello"}`+"\n")
	out, _, err := run(t, system, "--message", "a", "--history", h1, "--format", "json", "--now", "2026-03-01T10:15:00Z")
	if err != nil {
		t.Fatal(err)
	}
	prev := writeFile(t, dir, "turn1.json", out)
	var doc struct {
		DroppedMedia []any `json:"dropped_media"`
		Prefix       struct {
			Tokens int `json:"tokens"`
		} `json:"prefix"`
		Sections []struct{ Name string } `json:"sections"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.DroppedMedia == nil || doc.Prefix.Tokens == 0 || len(doc.Sections) != 2 {
		t.Errorf("json output: %s", out)
	}

	h2 := writeFile(t, dir, "h2.jsonl", `{"role":"user","content":"hi"}`+"\n"+`{"role":"assistant","content":"hello"}`+"\n"+`{"role":"user","content":"a"}`+"\n"+`{"role":"assistant","content":"b"}`+"\n")
	_, errOut, err := run(t, system, "--message", "c", "--history", h2, "--cache-diff", prev)
	if err != nil || !strings.Contains(errOut, "loom: cache: prefix unchanged: system prompt and 2 history messages as before, 2 new\n") {
		t.Errorf("unchanged: %v %s", err, errOut)
	}
	_, errOut, err = run(t, strings.Replace(system, "brief", "terse", 1), "--message", "c", "--history", h2, "--cache-diff", prev)
	if err != nil || !strings.Contains(errOut, `loom: cache: system prompt changed in section "Rules"`) {
		t.Errorf("changed: %v %s", err, errOut)
	}
}

func TestMessagesAnthropic(t *testing.T) {
	dir := t.TempDir()
	hist := writeFile(t, dir, "h.json", `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`)
	out, _, err := run(t, system, "--message", "x", "--history", hist, "--format", "anthropic", "--cache-history", "--cache-ttl", "1h")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, `"ttl": "1h"`); n != 2 || !strings.HasPrefix(out, "{\n  \"system\": [") {
		t.Errorf("%d breakpoints:\n%s", n, out)
	}
}

func TestMessagesErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.jsonl", `{"role":"user","content":"hi"}`+"\n"+`{"role":"narrator","content":"x"}`+"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "give the current message with --message or --message-file"},
		{[]string{"--message", "x", "--format", "xml"}, "--format must be openai, anthropic or json"},
		{[]string{"--message", "x", "--role", "tool"}, "--role must be user or assistant"},
		{[]string{"--message", "x", "--tz", "Mars/Olympus"}, `--tz: unknown time zone "Mars/Olympus" (want an IANA name such as Europe/Paris)`},
		{[]string{"--message", "x", "--history", bad}, bad + `:2: unknown role "narrator" (want user, assistant or tool)`},
		{[]string{"--message", "x", "--cache-diff", bad}, bad + ": invalid character '{' after top-level value"},
	} {
		_, _, err := run(t, system, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: got %v, want %s", tc.args, err, tc.want)
		}
	}
}
