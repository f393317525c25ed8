package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
)

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// leaves returns every command a user can run, by its path after "loom".
func leaves(c *cobra.Command) map[string]*cobra.Command {
	out := map[string]*cobra.Command{}
	for _, sub := range c.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		if sub.HasSubCommands() {
			for p, l := range leaves(sub) {
				out[sub.Name()+" "+p] = l
			}
			continue
		}
		out[sub.Name()] = sub
	}
	return out
}

// exampleLines returns the lines of c's help examples that run c on a
// built-in example workspace ("loom PATH ... --example ..."), each split
// into arguments after "loom".
func exampleLines(c *cobra.Command, path string) [][]string {
	var lines [][]string
	for _, line := range strings.Split(c.Example, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "loom "+path+" ") && strings.Contains(line, "--example ") {
			lines = append(lines, strings.Fields(line)[1:])
		}
	}
	return lines
}

// refusedExample are the commands whose point is to change the workspace:
// an example copied afresh each run would lose the change, so they refuse
// --example and say how to keep a copy.
var refusedExample = map[string]bool{
	"memory add": true, "memory forget": true, "memory import": true, "memory consolidate": true,
}

var copiedTo = regexp.MustCompile(`example \w+ copied to (\S+) for this run`)

// TestEveryCommandTakesExample runs, for every command the root lists,
// the line of its help that uses --example, exactly as printed (a live
// command gets a free port and is stopped once serving): each must succeed
// with output, and a copy made for the run must be gone afterwards. The
// commands that change a workspace must refuse with the commands that
// keep a copy instead.
func TestEveryCommandTakesExample(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("LOOM_CACHE_DIR", t.TempDir())
	t.Setenv("LOOM_MEMORY_DB", "")
	model := llmtest.New(t, llmtest.OpenAI)
	model.Default = func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Text: "Still take the umbrella."} }
	t.Setenv(llm.EnvBaseURL, model.URL)
	t.Setenv(llm.EnvModel, "test-model")
	t.Setenv(llm.EnvAPIKey, "test-key")
	t.Setenv(llm.EnvProvider, "")

	ios, _, _, _ := cmdutil.Test()
	all := leaves(newRootCmd(ios, nil))
	for _, name := range []string{"chat", "history clean", "init", "inspect", "mcp", "memory add", "memory list",
		"memory search", "messages", "render", "serve", "skills list", "tokens", "watch"} {
		if all[name] == nil {
			t.Fatalf("the root command does not list %q (lists %d commands)", name, len(all))
		}
	}
	for path, c := range all {
		t.Run(strings.ReplaceAll(path, " ", "_"), func(t *testing.T) {
			if c.Flags().Lookup("example") == nil {
				t.Fatalf("loom %s has no --example flag", path)
			}
			if refusedExample[path] {
				args := append(strings.Fields(path), "--example", "assistant")
				if c.Args != nil && c.Args(c, []string{"x"}) == nil {
					args = append(args, "x")
				} else if path == "memory consolidate" {
					args = append(args, "--history", "h.jsonl")
				}
				ios, _, out, errOut := cmdutil.Test()
				code := runWith(ios, args)
				for _, want := range []string{"loom init --example assistant DIR", "loom " + path + " -w DIR"} {
					if code != 2 || !strings.Contains(errOut.String(), want) {
						t.Errorf("loom %s: exit %d, stderr %q; want 2 and %q", strings.Join(args, " "), code, errOut, want)
					}
				}
				if out.Len() > 0 {
					t.Errorf("refused, yet printed %q", out)
				}
				return
			}
			lines := exampleLines(c, path)
			if lines == nil {
				t.Fatalf("loom %s --help shows no line running it with --example:\n%s", path, c.Example)
			}
			for _, args := range lines {
				runExampleLine(t, path, args)
			}
			switch path {
			case "chat":
				// The assistant example holds Mira's session (cli_mira): the
				// model must see it, and the reply must be printed.
				var turn string
				for _, r := range model.Requests() {
					if r.Kind == "chat" && turn == "" {
						turn = string(r.Body)
					}
				}
				if !strings.Contains(turn, "umbrella for the ferry") || !strings.Contains(turn, "And tomorrow evening?") {
					t.Errorf("the model was not sent the example's session and the new message: %.300s", turn)
				}
			case "init":
				if _, err := os.Stat("agent/AGENTS.md"); err != nil {
					t.Errorf("init --example wrote no agent/AGENTS.md: %v", err)
				}
			}
		})
	}
}

// runExampleLine runs one help line; a live command is stopped once it
// shows it is serving.
func runExampleLine(t *testing.T, path string, args []string) {
	t.Helper()
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := cancel // how a user ends a live command: Ctrl-C
	var in io.Reader = strings.NewReader("")
	switch path {
	case "chat":
		in = strings.NewReader("And tomorrow evening?\n")
	case "mcp":
		// stdin stays open, as a client's does, until the answer came.
		pr, pw := io.Pipe()
		defer pw.Close()
		stop = func() { pw.Close() } // an MCP client ends the session by closing stdin
		go pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}` + "\n"))
		in = pr
	}
	var ready *regexp.Regexp
	switch {
	case path == "serve":
		args = append(args, "--addr", "127.0.0.1:0")
		ready = regexp.MustCompile(`serving on http://`)
	case path == "inspect" && slices.Contains(args, "--web"):
		ready = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	case path == "watch":
		ready = regexp.MustCompile(`# Wren`)
	case path == "mcp":
		ready = regexp.MustCompile(`"serverInfo"`)
	}
	line := "loom " + strings.Join(args, " ")
	done := make(chan error, 1)
	go func() {
		root := newRootCmd(&cmdutil.IOStreams{In: in, Out: out, ErrOut: errOut}, args)
		root.SetArgs(args)
		done <- root.ExecuteContext(ctx)
	}()
	var err error
	if ready != nil {
		deadline := time.After(60 * time.Second)
	wait:
		for {
			select {
			case err = <-done:
				t.Fatalf("%s ended before serving: %v\nstdout %q\nstderr %q", line, err, out, errOut)
			case <-deadline:
				t.Fatalf("%s: not serving after 60s\nstdout %q\nstderr %q", line, out, errOut)
			case <-time.After(20 * time.Millisecond):
				if ready.MatchString(out.String()) || ready.MatchString(errOut.String()) {
					break wait
				}
			}
		}
		stop()
	}
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not end", line)
	}
	if err != nil {
		t.Fatalf("%s: %v\nstderr %q", line, err, errOut)
	}
	// An example has no structured memories, so its export is rightly empty.
	if out.String()+errOut.String() == "" && path != "memory export" {
		t.Errorf("%s printed nothing", line)
	}
	if path == "mcp" && !strings.Contains(out.String(), `"serverInfo"`) {
		t.Errorf("%s: no answer to initialize: %q", line, out)
	}
	if m := copiedTo.FindStringSubmatch(errOut.String()); m != nil {
		if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
			t.Errorf("the copy %s outlived the run: %v", m[1], err)
		}
	}
	if path == "chat" && !strings.Contains(out.String(), "Still take the umbrella.") {
		t.Errorf("reply not printed: %q", out)
	}
}
