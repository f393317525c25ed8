package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
)

// codexCLI is the Codex CLI's launcher in nm (it runs the native binary of
// @openai/codex's platform package).
func codexCLI(t *testing.T, nm string) string {
	t.Helper()
	p := filepath.Join(nm, "@openai/codex/bin/codex.js")
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, "codex", "%s has no @openai/codex (npm install @openai/codex)", nm)
	}
	return p
}

// TestCodexCLI runs OpenAI's Codex CLI itself (codex exec) offline, with
// loom as a custom model provider on the Responses API, through loom to a
// fake OpenAI and a fake Anthropic upstream: a plain prompt, and one where
// the model calls Codex's shell tool and answers from its output.
func TestCodexCLI(t *testing.T) {
	nm := testenv.NodeModules(t, "@openai/codex")
	bin := codexCLI(t, nm)
	for _, pe := range protoSetups(t, "") {
		t.Run(pe.provider, func(t *testing.T) {
			dir := t.TempDir()
			note := filepath.Join(dir, "note.txt")
			os.WriteFile(note, []byte("NOTE-BODY-4242\n"), 0o644)
			model := noteModel("exec_command", `{"cmd":"cat note.txt"}`)
			if pe.provider == "anthropic" {
				pe.anthropic.setReply(claudeCodeUpstream("anthropic", model))
			} else {
				pe.up.setReply(claudeCodeUpstream("openai", model))
			}
			home := t.TempDir()
			config := "model = \"gpt-5-codex\"\nmodel_provider = \"loom\"\n\n[model_providers.loom]\nname = \"loom\"\nbase_url = \"" + pe.base + "/v1\"\nwire_api = \"responses\"\nenv_key = \"LOOM_TEST_CODEX_KEY\"\n"
			os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644)
			run := func(prompt string) string {
				ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
				defer cancel()
				last := filepath.Join(t.TempDir(), "last.txt")
				cmd := exec.CommandContext(ctx, "node", bin, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--output-last-message", last, prompt)
				cmd.Dir = dir
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home, "LOOM_TEST_CODEX_KEY=dummy"}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("codex exec %q: %v\n%s", prompt, err, out)
				}
				got, _ := os.ReadFile(last)
				return strings.TrimSpace(string(got))
			}
			if got := run("PING: answer with the pong"); got != "PONG-CC-77" {
				t.Errorf("plain prompt: codex answered %q", got)
			}
			if got := run("please read the note and quote it"); got != "CC-DONE NOTE-BODY-4242" {
				t.Errorf("tool prompt: codex answered %q", got)
			}
			reqs := pe.requests()
			if len(reqs) < 3 {
				t.Fatalf("upstream got %d requests, want at least 3", len(reqs))
			}
			for i, r := range reqs {
				sys := upstreamSystem(r)
				if !strings.Contains(sys, "MARKER-AGENTS-7f3") || !strings.Contains(sys, "Codex") ||
					strings.Index(sys, "MARKER-AGENTS-7f3") > strings.Index(sys, "Codex") {
					t.Errorf("request %d: loom's prompt is not first with Codex's instructions beside it: %.1500s", i, sys)
				}
			}
			if last := string(reqs[len(reqs)-1].Raw); !strings.Contains(last, "NOTE-BODY-4242") || !strings.Contains(last, "cat note.txt") {
				t.Errorf("the shell call and its output did not reach the upstream: %.1000s", last)
			}
		})
	}
}
