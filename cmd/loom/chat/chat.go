// Package chat is the `loom chat` command: a REPL on the terminal, or on
// piped input one line per user turn, that talks to the configured model
// with the system prompt loom assembles, keeps the session under
// .loom/sessions/, and feeds the memory: extraction after each user turn,
// consolidation of old history into memory/MEMORY.md and memory/HISTORY.md.
package chat

import (
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/workspace"
)

// Config is the chat's settings, mapped from package config's loom.yaml
// (configFromWorkspace) with the LOOM_LLM_* environment over it; it is not
// itself read from YAML. Zero values mean the defaults.
type Config struct {
	LLM llm.Config
	// NoExtract turns memory extraction off.
	NoExtract bool
	// ExtractAssistant mines the assistant's replies too.
	ExtractAssistant bool
	// ExtractQueue bounds the extraction queue; default 256.
	ExtractQueue int
	// ConsolidateThreshold is the unconsolidated history, in tokens, that
	// triggers consolidation; default 16000, negative turns it off.
	ConsolidateThreshold int
	// ConsolidateKeep is the recent history kept out of consolidation;
	// default half the threshold.
	ConsolidateKeep int
	// ShutdownWait bounds how long the end of the session waits for
	// queued extraction and running consolidation; default 30s.
	ShutdownWait time.Duration
	// Timezone and Placement shape the runtime context block of each turn
	// (loom.yaml timezone and runtime.placement).
	Timezone  string
	Placement string
	// Window and Reserve fit each turn into the model's context window
	// (loom.yaml llm.context_window, else the window loom knows for the
	// model, and llm.reserve_output); 0 means no fitting.
	Window, Reserve int
}

// ChatOptions hold what `loom chat` was asked to do and the seams the
// caller wires.
type ChatOptions struct {
	IO *cmdutil.IOStreams

	Dir     string
	Channel string
	User    string

	// LoadConfig maps the workspace's loom.yaml onto the chat settings.
	// Nil means configFromWorkspace; the LOOM_LLM_* environment is applied
	// over it either way.
	LoadConfig func(ws *workspace.Workspace) (Config, error)

	// Signals delivers the signals that stop a reply or the chat; nil
	// means SIGINT, SIGTERM and SIGHUP via signal.Notify. SIGINT during a
	// reply cancels that reply only; any other signal, or SIGINT while
	// waiting for input, ends the chat. Either way the turn in flight is
	// saved first: the user's message and the reply as far as it came,
	// marked as cut.
	Signals <-chan os.Signal
	// Now stamps session messages; default time.Now.
	Now func() time.Time
	// Logger gets background failures; default text on IO.ErrOut.
	Logger *slog.Logger
}

// NewCmdChat returns the `loom chat` command. runF replaces chatRun in
// tests; nil means chatRun.
func NewCmdChat(ios *cmdutil.IOStreams, runF func(*ChatOptions) error) *cobra.Command {
	opts := &ChatOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk to the configured model with the prompt loom assembles",
		Long: `Start a conversation with the model configured in loom.yaml (llm:) or by
LOOM_LLM_BASE_URL, LOOM_LLM_API_KEY, LOOM_LLM_MODEL and LOOM_LLM_PROVIDER.

Each line you type is a user turn. The reply streams as it arrives and the
turn is saved to .loom/sessions/CHANNEL_USER.jsonl. After each turn the
memory is fed in the background: instructions and facts you state are
extracted into the memory store, and once the unconsolidated history
passes a token threshold its oldest part is consolidated into
memory/MEMORY.md and memory/HISTORY.md.

Input may be piped: one line per turn until end of input.

Commands:
  /new           archive the session into memory and start over
  /skill NAME    load a skill for the next turn (also /NAME in a message)
  /memory        show what is remembered
  /prompt        show the current system prompt
  /help          list the commands
  /exit          end the session (so does end of input)

Ctrl-C cancels the reply in flight, not the session; at the prompt it ends
the session. SIGTERM and SIGHUP end it too. Whatever ends a reply, the
message you typed and the reply as far as it came (marked as cut) are saved
first.`,
		Example: `  loom chat -w ./agent
  printf 'hello\nwhat did I just say?\n' | loom chat -w ./agent --user ana
  loom chat --example assistant --user mira`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return chatRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Dir, "workspace", "w", ".", "workspace folder")
	shared.AddExampleFlag(cmd, &opts.Dir, shared.ExampleLive)
	cmd.Flags().StringVar(&opts.Channel, "channel", "cli", "channel name, part of the session key")
	cmd.Flags().StringVar(&opts.User, "user", "", "user id: scopes memories and names the session")
	return cmd
}
