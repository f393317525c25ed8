package session

import (
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/skills"
)

// SkillExpander adapts a loaded skill set to messages.Build's expander, so
// a session injects skills exactly as `loom messages` does.
func SkillExpander(set *skills.Set) messages.SkillExpander { return skillSet{set} }

type skillSet struct{ set *skills.Set }

func (s skillSet) Expand(text string) (string, []messages.Expansion, error) {
	out, uses := s.set.Expand(text, 0)
	exps := make([]messages.Expansion, len(uses))
	for i, u := range uses {
		exps[i] = messages.Expansion{Name: u.Name, Ref: u.Ref, Path: u.Path, Cut: u.Cut}
	}
	return out, exps, nil
}

// toRequest turns a built message list (system message first) into a
// model request.
func toRequest(msgs []messages.Message, model string) llm.Request {
	req := llm.Request{Model: model}
	if len(msgs) > 0 && msgs[0].Role == messages.RoleSystem {
		req.System = msgs[0].Content.String()
		msgs = msgs[1:]
	}
	req.Messages = msgs
	return req
}
