package mcpserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/skills"
)

// SystemPrompt is the name of the prompt that returns the rendered system
// prompt. A skill of the same name is not offered as a prompt (its
// resource is still served).
const SystemPrompt = "system"

// maxArg bounds a prompt argument, in bytes.
const maxArg = 64 << 10

func (s *Server) addSystemPrompt() {
	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        SystemPrompt,
		Title:       "System prompt",
		Description: "The workspace's rendered system prompt.",
		Arguments: []*mcp.PromptArgument{
			{Name: "channel", Description: "channel the agent answers on (slack, whatsapp, …)"},
			{Name: "user", Description: "whose memories to select"},
			{Name: "budget", Description: "token budget for the whole prompt, a positive whole number"},
		},
	}, s.getSystemPrompt)
}

func (s *Server) getSystemPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	opts := s.renderOptions()
	args := req.Params.Arguments
	for k, v := range args {
		if len(v) > maxArg {
			return nil, fmt.Errorf("argument %s: longer than %d bytes", k, maxArg)
		}
	}
	opts.Channel = args["channel"]
	if u := args["user"]; u != "" {
		if err := s.checkUser(u); err != nil {
			return nil, fmt.Errorf("argument user: %w", err)
		}
		opts.User = u
	}
	if b := strings.TrimSpace(args["budget"]); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("argument budget: %q is not a positive number of tokens", b)
		}
		opts.Budget = n
	}
	res, err := s.render(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{
		Description: fmt.Sprintf("system prompt: %d tokens (%s)", res.Report.Tokens, res.Report.Encoding),
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: res.Prompt}}},
	}, nil
}

// skillPrompt is the listing entry of one skill.
func skillPrompt(sk *skills.Skill) *mcp.Prompt {
	desc := sk.Description()
	if !sk.Available {
		desc = strings.TrimSpace(desc + " (unavailable: needs " + sk.MissingText() + ")")
	}
	return &mcp.Prompt{
		Name:        sk.Name,
		Description: desc,
		Arguments: []*mcp.PromptArgument{
			{Name: "message", Description: "what to do with the skill; it follows /" + sk.Name + " in the text"},
		},
	}
}

// getSkill expands one skill the way "/name message" expands in a user
// message.
func (s *Server) getSkill(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		msg := req.Params.Arguments["message"]
		if len(msg) > maxArg {
			return nil, fmt.Errorf("argument message: longer than %d bytes", maxArg)
		}
		set, err := s.skills()
		if err != nil {
			return nil, err
		}
		sk, ok := set.Get(name)
		if !ok || sk.Status == skills.StatusBroken {
			return nil, fmt.Errorf("skill %q: no such skill", name)
		}
		if !sk.Available {
			return nil, fmt.Errorf("skill %q is unavailable: it needs %s", name, sk.MissingText())
		}
		text := "/" + name
		if msg = strings.TrimSpace(msg); msg != "" {
			text += " " + msg
		}
		out, uses := set.Expand(text, 0)
		res := &mcp.GetPromptResult{
			Description: sk.Description(),
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: out}}},
		}
		for _, u := range uses {
			if u.Name == name && u.Cut > 0 {
				res.Description += fmt.Sprintf(" (%d of %d characters cut from the middle; the whole file is %s)", u.Cut, u.Chars, u.Path)
				res.Meta = mcp.Meta{"loom/cut": u.Cut, "loom/chars": u.Chars}
			}
		}
		return res, nil
	}
}
