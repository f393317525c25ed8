package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/internal/buildinfo"
)

// TestRunStdio speaks MCP to Run over its streams: initialize, list the
// prompts, read loom://prompt; stdin's end ends the server.
func TestRunStdio(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("# Agents\n\nBe exact.\n"), 0o644)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ios := &cmdutil.IOStreams{In: inR, Out: outW, ErrOut: io.Discard}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), &Options{IO: ios, Dir: root, Now: "2026-01-02T03:04:05Z"}) }()
	go func() {
		for _, l := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`,
			`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"loom://prompt"}}`,
		} {
			io.WriteString(inW, l+"\n")
		}
	}()
	answers := map[float64]json.RawMessage{}
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	for len(answers) < 3 && sc.Scan() {
		var m struct {
			ID     float64         `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID > 0 {
			answers[m.ID] = m.Result
		}
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("loom mcp did not stop when stdin closed")
	}
	if !strings.Contains(string(answers[1]), `"version":"`+buildinfo.Version+`"`) {
		t.Errorf("over stdio the server is not loom's version %s: %s", buildinfo.Version, answers[1])
	}
	if !strings.Contains(string(answers[2]), `"name":"system"`) {
		t.Errorf("prompts/list answer lacks the system prompt: %s", answers[2])
	}
	if !strings.Contains(string(answers[3]), "Be exact.") {
		t.Errorf("loom://prompt lacks AGENTS.md: %.300s", answers[3])
	}
}

func TestBadFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	if err := Run(context.Background(), &Options{IO: ios, Dir: t.TempDir(), Now: "yesterday"}); err == nil {
		t.Errorf("--now yesterday: no error")
	}
	if err := Run(context.Background(), &Options{IO: ios, Dir: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Errorf("a missing workspace: no error")
	}
}
