package chat

import (
	"context"
	"fmt"
	"strings"

	"github.com/loomctx/loom/cmd/loom/render"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// wireDefaults fills the seams a caller left nil with loom's own pieces:
// loom.yaml for the configuration, a cached prompt builder for the system
// prompt, and the workspace's skills for /skill. It returns a function that
// releases what it opened.
func (o *ChatOptions) wireDefaults() (func(), error) {
	closeFn := func() {}
	if o.LoadConfig == nil {
		o.LoadConfig = configFromWorkspace
	}
	if o.SystemPrompt != nil && o.Skill != nil {
		return closeFn, nil
	}
	ws, err := workspace.Open(o.Dir)
	if err != nil {
		return closeFn, err
	}
	// A chat renders the prompt every turn: watch the workspace so that an
	// unchanged one costs no reads.
	if err := ws.Watch(); err != nil {
		fmt.Fprintf(o.IO.ErrOut, "loom: warning: %v; checking files on each turn instead\n", err)
	}
	b := prompt.New(ws)
	closeFn = func() { b.Close(); ws.Close() }
	popts := prompt.Options{Channel: o.Channel, User: o.User, ChatID: o.Channel + ":" + o.User}
	if o.Channel == "cli" {
		popts.Channel = "" // the terminal has no wrapper of its own
	}
	if o.SystemPrompt == nil {
		o.SystemPrompt = func(ctx context.Context) (string, error) {
			res, err := b.Render(ctx, popts)
			if res == nil {
				return "", err
			}
			return res.Prompt, nil
		}
		o.PromptReport = func(ctx context.Context) (string, error) {
			res, err := b.Render(ctx, popts)
			if res == nil {
				return "", err
			}
			var sb strings.Builder
			render.WriteReport(&sb, &res.Report)
			return sb.String(), nil
		}
	}
	if o.Skill == nil {
		cfg, err := config.Load(ws)
		if err != nil {
			return closeFn, err
		}
		sopts, _ := skills.FromConfig(cfg)
		loader := skills.New(ws, sopts)
		o.Skill = func(name string) (string, error) {
			s, ok := loader.Load().Get(name)
			if !ok || s.Status == skills.StatusBroken {
				return "", fmt.Errorf("no skill named %q", name)
			}
			return s.Body, nil
		}
	}
	return closeFn, nil
}

// configFromWorkspace maps loom.yaml's llm: block, with the LOOM_LLM_*
// environment over it, onto the chat settings. The API key is never
// written in loom.yaml: api_key_env names the variable that holds it, and
// llm.Resolve applies the rule for where it may go.
func configFromWorkspace(dir string) (Config, error) {
	ws, err := workspace.Open(dir)
	if err != nil {
		return Config{}, err
	}
	wc, err := config.Load(ws)
	if err != nil {
		return Config{}, err
	}
	l := wc.LLM
	c := Config{Timezone: wc.Timezone, Placement: wc.Runtime.Placement}
	if c.LLM, err = llm.Resolve(l, nil); err != nil {
		return Config{}, err
	}
	c.NoExtract = !llm.Enabled(l.Extraction.Enabled, c.LLM)
	c.ExtractAssistant = l.Extraction.IncludeAssistant != nil && *l.Extraction.IncludeAssistant
	if !llm.Enabled(l.Consolidation.Enabled, c.LLM) {
		c.ConsolidateThreshold = -1
	} else if l.Consolidation.ThresholdTokens > 0 {
		c.ConsolidateThreshold = l.Consolidation.ThresholdTokens
	}
	return c, nil
}
