// Package shared holds what several loom commands share: the flags that
// choose a workspace and shape a prompt, and turning them into library
// options.
package shared

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/examples"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// RenderFlags are the flags of every command that renders a prompt.
type RenderFlags struct {
	Dir          string
	Example      string
	Preset       string
	Channel      string
	ChatURL      string
	ForkFile     string
	Budget       int
	Encoding     string
	Model        string
	TZ           string
	Now          string
	TestMode     bool
	Tools        string
	Subagent     bool
	User         string
	ChatID       string
	MemoryBudget int

	flags *pflag.FlagSet
}

// Bind registers the flags on cmd.
func (f *RenderFlags) Bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.flags = fl
	fl.StringVarP(&f.Dir, "workspace", "w", ".", "workspace folder")
	fl.StringVar(&f.Example, "example", "", "render a built-in example workspace instead ("+strings.Join(examples.Names(), " or ")+")")
	fl.StringVar(&f.Preset, "preset", "", "assistant or analyst (default: from loom.yaml, else detected)")
	fl.StringVar(&f.Channel, "channel", "", "channel the agent answers on (slack, whatsapp, …)")
	fl.StringVar(&f.ChatURL, "chat-url", "", "link to this conversation, added as its own section")
	fl.StringVar(&f.ForkFile, "fork-file", "", `JSON file {"title","author","selection"} of a forked chat`)
	fl.IntVar(&f.Budget, "budget", 0, "token budget for the whole prompt (default: loom.yaml's, else none)")
	fl.StringVar(&f.Encoding, "encoding", "", "token encoding: o200k_base, cl100k_base or chars4")
	fl.StringVar(&f.Model, "model", "", "model name to pick the encoding from")
	fl.StringVar(&f.TZ, "tz", "", "IANA time zone for the date (default: loom.yaml's, else UTC)")
	fl.StringVar(&f.Now, "now", "", "fix the clock, as RFC 3339 (for tests and reproducible output)")
	fl.BoolVar(&f.TestMode, "test-mode", false, "leave out the clarification rule")
	fl.StringVar(&f.Tools, "tools", "", "comma-separated tools the agent has; tool rules for others are left out")
	fl.BoolVar(&f.Subagent, "subagent", false, "render the smaller subagent prompt")
	fl.StringVar(&f.User, "user", "", "select this user's memories")
	fl.StringVar(&f.ChatID, "chat-id", "", "the current chat (its memories can be left out)")
	fl.IntVar(&f.MemoryBudget, "memory-budget", 0, "token budget for structured memories (default 1000)")
}

// Workspace opens the workspace the flags name: an example or a folder.
func (f *RenderFlags) Workspace() (*workspace.Workspace, error) {
	if f.Example != "" {
		if f.flags != nil && f.flags.Changed("workspace") {
			return nil, cmdutil.FlagErrorf("-w and --example cannot be used together")
		}
		fsys, err := examples.FS(f.Example)
		if err != nil {
			return nil, cmdutil.FlagErrorf("%v", err)
		}
		return workspace.OpenFS(fsys), nil
	}
	return workspace.Open(f.Dir)
}

// Folder returns the workspace folder the flags name, for a command that
// stays up on a folder (watch, inspect --web): -w's, or a copy of the
// example made by [ExampleFolder] and named on w. done removes the copy.
func (f *RenderFlags) Folder(w io.Writer) (dir string, done func(), err error) {
	if f.Example == "" {
		return f.Dir, func() {}, nil
	}
	if f.flags != nil && f.flags.Changed("workspace") {
		return "", nil, cmdutil.FlagErrorf("-w and --example cannot be used together")
	}
	dir, done, err = ExampleFolder(f.Example)
	if err != nil {
		return "", nil, err
	}
	SayExampleFolder(w, f.Example, dir)
	return dir, done, nil
}

// Options turns the flags into prompt options.
func (f *RenderFlags) Options() (prompt.Options, error) {
	o := prompt.Options{
		Preset: f.Preset, Channel: f.Channel, ChatURL: f.ChatURL, Subagent: f.Subagent,
		Timezone: f.TZ, TestMode: f.TestMode, User: f.User, ChatID: f.ChatID,
		MemoryBudget: f.MemoryBudget, Budget: f.Budget, Encoding: f.Encoding, Model: f.Model,
	}
	if f.Budget < 0 || (f.flags != nil && f.flags.Changed("budget") && f.Budget <= 0) {
		return o, cmdutil.FlagErrorf("--budget must be a positive number of tokens")
	}
	if f.Encoding != "" && !slices.Contains(tokens.Names(), f.Encoding) {
		return o, cmdutil.FlagErrorf("--encoding must be one of %s, not %q", strings.Join(tokens.Names(), ", "), f.Encoding)
	}
	if f.TZ != "" {
		if _, err := time.LoadLocation(f.TZ); err != nil {
			return o, cmdutil.FlagErrorf("--tz: unknown time zone %q (want an IANA name such as Europe/Paris)", f.TZ)
		}
	}
	if f.Encoding != "" && f.Model != "" {
		return o, cmdutil.FlagErrorf("--encoding and --model cannot be used together")
	}
	if f.Preset != "" && f.Preset != prompt.Assistant && f.Preset != prompt.Analyst {
		return o, cmdutil.FlagErrorf("--preset must be %s or %s", prompt.Assistant, prompt.Analyst)
	}
	if f.Now != "" {
		t, err := time.Parse(time.RFC3339, f.Now)
		if err != nil {
			return o, cmdutil.FlagErrorf("--now: %v", err)
		}
		o.Now = t
	}
	if f.Tools != "" {
		o.Tools = []string{}
		for _, t := range strings.Split(f.Tools, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.Tools = append(o.Tools, t)
			}
		}
	}
	if f.ForkFile != "" {
		data, err := cmdutil.ReadFileLimit(f.ForkFile, cmdutil.DefaultReadLimit, nil)
		if err != nil {
			return o, err
		}
		var fork prompt.Fork
		if err := json.Unmarshal(data, &fork); err != nil {
			return o, fmt.Errorf("%s: %v", f.ForkFile, err)
		}
		o.Fork = &fork
	}
	return o, nil
}

// PrintDiagnostics writes a render's diagnostics to w.
func PrintDiagnostics(w io.Writer, r *prompt.Result) {
	cmdutil.PrintDiagnostics(w, r.Report.Diagnostics)
}
