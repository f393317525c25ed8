package messages

import (
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/tokens"
)

// skillSet adapts a loaded skill set to the messages package's expander.
type skillSet struct{ set *skills.Set }

func (s skillSet) Expand(text string) (string, []messages.Expansion, error) {
	out, uses := s.set.Expand(text, 0)
	exps := make([]messages.Expansion, len(uses))
	for i, u := range uses {
		exps[i] = messages.Expansion{Name: u.Name, Ref: u.Ref, Path: u.Path, Cut: u.Cut}
	}
	return out, exps, nil
}

// fromWorkspace fills what the flags leave to loom.yaml: the skills that
// /name and $name expand to, the token counter (the prompt's encoding), and
// the time zone of the runtime block.
func (o *MessagesOptions) fromWorkspace(b *prompt.Builder, f *shared.RenderFlags) (zone string, err error) {
	cfg, err := config.Load(b.Workspace())
	if err != nil {
		return "", err
	}
	if o.Placement == "" { // no --placement: loom.yaml's, as every front end maps it
		rt, _ := session.RuntimeFromConfig(cfg)
		o.Placement = string(rt.Placement)
	}
	if o.Skills == nil {
		set, err := b.Skills()
		if err != nil {
			return "", err
		}
		o.Skills = skillSet{set}
	}
	if o.Counter == nil {
		enc, model := cfg.Encoding, cfg.Model
		if f.Encoding != "" || f.Model != "" {
			enc, model = f.Encoding, f.Model
		}
		switch {
		case enc != "":
			c, err := tokens.Get(enc)
			if err != nil {
				return "", err
			}
			o.Counter = c
		case model != "":
			o.Counter, _ = tokens.ForModel(model)
		}
	}
	o.fitFromConfig(cfg)
	ws := b.Workspace()
	o.logEntries = func() []string {
		text, err := ws.ReadFile(memory.HistoryFile)
		if err != nil {
			return nil // no log yet: the note says how many went, no more
		}
		return fit.LogEntries(string(text))
	}
	return cfg.Timezone, nil
}

// fitFromConfig fills the window and the reply's reserve the flags leave
// unset: loom.yaml's for llm.model, else the window loom knows for it.
func (o *MessagesOptions) fitFromConfig(cfg *config.Config) {
	window, reserve := cfg.Window(cfg.LLM.Model)
	if window == 0 {
		window = fit.KnownWindow(cfg.LLM.Model)
	}
	if o.ContextWindow == 0 {
		o.ContextWindow = window
	}
	if o.ReserveOutput == 0 {
		o.ReserveOutput = reserve
	}
}
