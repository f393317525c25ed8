package gateway

import (
	"context"
	"errors"
	"net/http"

	"github.com/loomctx/loom/gateway/protocol"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/server"
	"github.com/loomctx/loom/session"
)

// turnRequest is a chat request as loom needs it, whatever wire it came
// on: the client's conversation and who it is for. A protocol's decoder
// fills it; prepare and record know nothing of any wire.
type turnRequest struct {
	msgs      []messages.Message // the client's messages, system ones taken out
	clientSys []string           // the client's system and developer messages' text
	user      string             // whose memories: user, else metadata.user_id
	key       string             // the session; "" stores nothing
	channel   string
	// id names the turn for a retry (the Idempotency-Key header); ""
	// means the conversation's hash.
	id string
	// model, maxTokens, tools and toolDefs are what fitting needs of the
	// model call: the model asked for, the reply's limit (0: unsaid) and
	// the tool definitions, as the JSON a Chat Completions client sent
	// (tools) or decoded from another wire (toolDefs).
	model     string
	maxTokens int
	tools     string
	toolDefs  []llm.Tool
}

// turn is a prepared gateway turn: the message list to send (built) and,
// when the request names a session, the session's prepared turn, whose
// lock is held until record or release.
type turn struct {
	*built
	prep *session.Prepared // nil without a session
	hold func()            // the engine's hold on the session
}

// prepare renders the system prompt and builds the message list for in,
// through the session's Prepare when in names one (which takes the
// session's turn lock across replicas). The caller encodes the list for
// its upstream, relays the reply, then calls record (or release).
func (g *Gateway) prepare(ctx context.Context, ws *server.Workspace, st *upstream, in *turnRequest) (*turn, error) {
	t := &turn{}
	var res *prompt.Result
	var err error
	if in.key == "" {
		res, err = ws.Builder.Render(ctx, prompt.Options{Channel: in.channel, User: in.user})
	} else {
		var sess *session.Session
		sess, t.hold, err = st.eng.Session(ctx, ws, server.SessionOptions{Key: in.key, Channel: in.channel, User: in.user})
		if err != nil {
			return nil, err
		}
		if t.prep, err = sess.Prepare(ctx, session.TurnInput{Conversation: in.msgs, ID: in.id}); err != nil {
			t.release()
			return nil, err
		}
		res, err = t.prep.Prompt, t.prep.PromptErr
	}
	var over *md.OverBudgetError
	if res == nil || (err != nil && !errors.As(err, &over)) {
		t.release()
		return nil, errors.Join(errors.New("render"), err)
	}
	var summaries func() []string
	if t.prep != nil {
		summaries = t.prep.LogSummaries(ctx)
	}
	if t.built, err = g.build(ctx, ws, st, in, res, summaries); err != nil {
		t.release()
		return nil, err
	}
	return t, nil
}

// record stores the turn with the reply (nothing without a session). Only
// after it returns nil may the reply be acknowledged.
func (t *turn) record(ctx context.Context, r session.Reply) error {
	if t.prep == nil {
		return nil
	}
	defer t.release()
	return t.prep.Record(ctx, r)
}

// release ends the turn without storing it; after record it does nothing.
func (t *turn) release() {
	if t.prep != nil {
		t.prep.Release()
	}
	if t.hold != nil {
		t.hold()
		t.hold = nil
	}
}

// failure answers an error that stopped a turn before or after the
// upstream call, in the front's error shape: a problem keeps its status
// and code, an unreachable store is 503 store_unavailable with
// Retry-After, a refused field 400.
func (g *Gateway) failure(w http.ResponseWriter, r *http.Request, f front, err error) {
	var fe *fieldError
	var pe *protocol.FieldError
	var p *server.Problem
	switch {
	case errors.As(err, &fe):
		g.fail(w, f, http.StatusBadRequest, "invalid_value", fe.param, fe.msg)
	case errors.As(err, &pe):
		g.fail(w, f, http.StatusBadRequest, "invalid_value", pe.Param, err.Error())
	case errors.As(err, &p):
		g.fail(w, f, p.Status, p.Code, p.Field, p.Detail)
	case errors.Is(err, memory.ErrUnavailable):
		g.log.Warn("gateway: store unavailable", "request_id", server.RequestID(r), "err", err)
		g.fail(w, f, http.StatusServiceUnavailable, server.CodeStoreUnavailable, "", storeUnavailable)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// the client left
	default:
		g.log.Error("gateway: turn", "request_id", server.RequestID(r), "err", err)
		g.fail(w, f, http.StatusInternalServerError, "turn_failed", "", "loom could not run the turn; see the server log for request "+server.RequestID(r))
	}
}

const storeUnavailable = "the memory and session store is unavailable; retry shortly"

// unstored is what a stream that relayed its reply ends with when the
// turn could not be stored: the error event's code and message.
func unstored(err error) (code, msg string) {
	if errors.Is(err, memory.ErrUnavailable) {
		return server.CodeStoreUnavailable, storeUnavailable
	}
	return "store_failed", "loom could not store the turn; it is not acknowledged, retry it"
}

// streamFailure ends a Chat Completions stream whose turn could not be
// stored with an error event in OpenAI's stream shape instead of data:
// [DONE], so the client does not take the turn as acknowledged.
func streamFailure(w http.ResponseWriter, err error) {
	code, msg := unstored(err)
	w.Write([]byte("data: " + string(protocol.OpenAIError("server_error", code, "", msg)) + "\n\n"))
	http.NewResponseController(w).Flush()
}
