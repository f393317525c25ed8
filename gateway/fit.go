package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/fit"
	"github.com/loomctx/loom/gateway/protocol"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/server"
)

// fitting is what a request is fitted with (package fit): the model's
// context window (0 when none is known: the request is only counted), the
// room kept for the reply, and what the tool definitions cost.
type fitting struct {
	window, reserve, tools int
}

// reserveFields name the reply's room in each protocol: Chat Completions'
// two spellings, the Responses API's, and Anthropic's max_tokens.
var reserveFields = []string{"max_completion_tokens", "max_tokens", "max_output_tokens"}

// fittingFor reads the window and the reserve from loom.yaml for the model
// the client asked for (its gateway.models entry, else the upstream
// model's, else llm.context_window, else the window loom knows for the
// model), and the reserve from the request when it names one.
func fittingFor(cfg *config.Config, q *turnRequest, upstreamModel string, c messages.Counter) fitting {
	upstreamModel = cfg.Gateway.UpstreamModel(q.model, upstreamModel)
	name := q.model
	if _, ok := cfg.Gateway.Models[name]; !ok || name == "" {
		name = upstreamModel
	}
	var f fitting
	f.window, f.reserve = cfg.Window(name)
	if f.window == 0 {
		if f.window = fit.KnownWindow(q.model); f.window == 0 {
			f.window = fit.KnownWindow(upstreamModel)
		}
	}
	if q.maxTokens > 0 {
		f.reserve = q.maxTokens
	}
	switch {
	case q.tools != "":
		f.tools = c.Count(q.tools)
	case len(q.toolDefs) > 0:
		f.tools = toolTokens(c, q.toolDefs)
	}
	return f
}

// toolFraming is the JSON around one tool definition, in tokens: a Chat
// Completions tool's keys and braces are 14 in o200k_base and in
// cl100k_base, the most of the three wires' shapes (Responses 12,
// Messages 9).
const toolFraming = 14

// toolTokens counts decoded tool definitions part by part: each one's
// name, description and schema text, and its framing. Counting the parts
// needs no second JSON copy of every tool, which took more memory than
// decoding them.
func toolTokens(c messages.Counter, tools []llm.Tool) int {
	n := 0
	for _, tl := range tools {
		n += toolFraming + c.Count(tl.Name) + c.Count(tl.Description) + c.Count(string(tl.Parameters))
	}
	return n
}

// chatLimits reads what fitting needs from a Chat Completions request's
// fields: the model, the reply's limit (max_completion_tokens, else
// max_tokens) and the tools, counted as the client sent them.
func (q *request) chatLimits() {
	json.Unmarshal(q.fields["model"], &q.model)
	for _, k := range reserveFields {
		if n, err := strconv.Atoi(strings.TrimSpace(string(q.fields[k]))); err == nil && n > 0 {
			q.maxTokens = n
			break
		}
	}
	if t := q.fields["tools"]; len(t) > 0 && string(t) != "null" {
		q.tools = string(t)
	}
}

// limits keeps what fitting needs of a decoded Responses or Messages
// turn: the model asked for, the reply's limit and the tool definitions.
func (q *turnRequest) limits(t *protocol.Turn) {
	q.model, q.maxTokens, q.toolDefs = t.Model, t.Call.MaxTokens, t.Call.Tools
}

// errFitOver is a request that cannot fit its window even with every
// history message gone: its tool definitions or a system prompt that
// cannot shrink are too large.
type errFitOver struct{ rep *fit.Report }

func (e *errFitOver) Error() string {
	return fmt.Sprintf("the request cannot fit the model's %d-token context window: %s", e.rep.Window, strings.Join(e.rep.Reasons, "; "))
}

// fitError turns what fitting refused into the client's field error.
func fitError(err error, f fitting) error {
	var over *errFitOver
	switch {
	case errors.Is(err, fit.ErrNoRoom):
		return ferr("max_tokens", "%d tokens for the reply leave no room for the prompt in the model's %d-token context window", f.reserve, f.window)
	case errors.As(err, &over):
		return ferr("messages", "%v", err)
	}
	return err
}

// fitTurn fits a built request, final, into its model's window. When the
// system prompt has to be rendered again within the room left, *sys and
// *res become the new one's. A nil result means nothing is counted (the
// workspace has no counter).
func (g *Gateway) fitTurn(ctx context.Context, ws *server.Workspace, st *upstream, q *turnRequest, final []messages.Message, summaries func() []string, sys **sysEntry, res **prompt.Result) (*fit.Result, error) {
	if st.counter == nil {
		return nil, nil
	}
	fz := fittingFor(st.cfg, q, st.lc.Model, st.counter)
	clientSys, mode := strings.Join(q.clientSys, "\n\n"), st.cfg.Gateway.ClientSystemMode()
	fopts := fit.Options{Window: fz.window, Reserve: fz.reserve, Counter: st.counter, Tools: fz.tools,
		SystemTokens: (*sys).tokens, Summaries: summaries,
		ShrinkSystem: func(room int) (string, []messages.Section, error) {
			// The render's budget covers loom's prompt; the client's own
			// system text beside it keeps its size.
			budget := room - ((*sys).tokens - st.counter.Count((*res).Prompt))
			if budget <= 0 {
				return "", nil, errors.New("the client's system text alone fills the room")
			}
			r, err := ws.Builder.Render(ctx, prompt.Options{Channel: q.channel, User: q.user, ChatID: q.key, Budget: budget})
			var over *md.OverBudgetError
			if r == nil || (err != nil && !errors.As(err, &over)) {
				return "", nil, fmt.Errorf("render: %w", err)
			}
			e, err := g.systemFor(r, clientSys, mode, st.counter)
			if err != nil {
				return "", nil, err
			}
			*sys, *res = e, r
			return e.system, e.sections, nil
		}}
	fr, err := fit.Fit(final, fopts)
	if err != nil {
		return nil, fitError(err, fz)
	}
	if fr.Report.Over > 0 {
		return nil, fitError(&errFitOver{&fr.Report}, fz)
	}
	return fr, nil
}
