package chat

import (
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/workspace"
)

// configFromWorkspace maps loom.yaml's llm: block, with the LOOM_LLM_*
// environment over it, onto the chat settings. The API key is never
// written in loom.yaml: api_key_env names the variable that holds it, and
// llm.Resolve applies the rule for where it may go.
func configFromWorkspace(ws *workspace.Workspace) (Config, error) {
	wc, err := config.Load(ws)
	if err != nil {
		return Config{}, err
	}
	l := wc.LLM
	c := Config{Timezone: wc.Timezone, Placement: wc.Runtime.Placement}
	if c.LLM, err = llm.Resolve(l, nil); err != nil {
		return Config{}, err
	}
	c.Window, c.Reserve = wc.Window(c.LLM.Model)
	if c.Window == 0 {
		c.Window = fit.KnownWindow(c.LLM.Model)
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
