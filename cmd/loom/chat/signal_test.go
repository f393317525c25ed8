package chat

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/workspace"
)

// The signal tests run this test binary again as `loom chat`, a real
// process with real signal handling, against a fake endpoint that streams
// the start of a reply and then never ends it.
const envChatProc = "LOOM_CHAT_TEST_PROC"

func TestMain(m *testing.M) {
	if base := os.Getenv(envChatProc); base != "" {
		opts := &ChatOptions{
			IO: cmdutil.System(), Dir: os.Getenv("LOOM_CHAT_TEST_DIR"), Channel: "cli", User: "ana",
			LoadConfig: func(*workspace.Workspace) (Config, error) {
				return Config{
					LLM:                  llm.Config{Provider: llmtest.OpenAI, BaseURL: base, APIKey: "k", Model: "test-model", Timeout: time.Minute},
					NoExtract:            true,
					ConsolidateThreshold: -1,
					ShutdownWait:         5 * time.Second,
				}, nil
			},
		}
		if err := chatRun(opts); err != nil {
			os.Stderr.WriteString("loom: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSignalDuringReplySavesTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, tc := range []struct {
		sig    syscall.Signal
		reason string
		ends   bool
	}{
		{syscall.SIGTERM, "terminated", true},
		{syscall.SIGHUP, "hangup", true},
		{syscall.SIGINT, "interrupted", false},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			s := llmtest.New(t, llmtest.OpenAI)
			s.Push(llmtest.Reply{Text: "Once upon a time", Endless: "empty"})
			dir := t.TempDir()
			os.WriteFile(dir+"/AGENTS.md", []byte("You are the test agent.\n"), 0o644)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envChatProc+"="+s.URL+"/v1", "LOOM_CHAT_TEST_DIR="+dir)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out, errOut syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			stdin.Write([]byte("Tell me a story\n"))
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(out.String(), "Once upon a time") {
				if time.Now().After(deadline) {
					t.Fatalf("the reply never started; stderr:\n%s", errOut.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			cmd.Process.Signal(tc.sig)
			if !tc.ends {
				// Ctrl-C cancels the reply only; the chat goes on until
				// its input ends.
				time.Sleep(200 * time.Millisecond)
				if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
					t.Fatalf("SIGINT during a reply ended the chat: %v", err)
				}
				stdin.Close()
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("exit: %v\n%s", err, errOut.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("loom chat did not end after %v; stderr:\n%s", tc.sig, errOut.String())
			}
			h := readSession(t, dir)
			if len(h.Messages) != 2 || h.Messages[0].Content.Text != "Tell me a story" || h.Messages[1].Content.Text != "Once upon a time" {
				t.Fatalf("session %+v\nstderr:\n%s", h.Messages, errOut.String())
			}
			if why, ok := session.IsCut(h.Messages[1]); !ok || why != tc.reason {
				t.Errorf("reply cut mark %q %v, want %q", why, ok, tc.reason)
			}
		})
	}
}

// SIGTERM while the chat waits for input ends it at once, with the
// finished turn saved.
func TestSignalWhileIdleEndsChat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Text: "Done."})
	dir := t.TempDir()
	os.WriteFile(dir+"/AGENTS.md", []byte("You are the test agent.\n"), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChatProc+"="+s.URL+"/v1", "LOOM_CHAT_TEST_DIR="+dir)
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	stdin.Write([]byte("Hello\n"))
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errOut.String(), "[tokens in ") {
		if time.Now().After(deadline) {
			t.Fatalf("the turn never ended; stderr:\n%s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SIGTERM at the prompt did not end the chat")
	}
	if h := readSession(t, dir); len(h.Messages) != 2 || h.Messages[1].Content.Text != "Done." {
		t.Errorf("session %+v", h.Messages)
	}
}
