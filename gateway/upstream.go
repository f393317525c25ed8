package gateway

import (
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/redact"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/server"
	"github.com/loomctx/loom/session"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// upstream is what one version of a workspace's loom.yaml says about the
// model: where requests go and with what key. The gateway keeps one per
// workspace and builds a new one when loom.yaml changes, so an edit to
// llm: (a new base URL, model, provider or key variable) applies to the
// next request, with no restart. Memory extraction and consolidation are
// the sessions' own, from the server's engine, which follows loom.yaml
// the same way.
type upstream struct {
	file *workspace.File // the loom.yaml it was built from; nil when there is none
	eng  *server.Engine  // the engine it was checked against
	err  error           // the llm: section cannot be used; answered as 503

	cfg       *config.Config
	lc        llm.Config
	base      string // the OpenAI-compatible upstream's base URL
	host      string // where requests go, for error messages (no credentials)
	anthropic llm.Client
	isAnthro  bool
	// turns calls the upstream through llm's client for the Responses and
	// Messages front ends (Chat Completions to an OpenAI-compatible
	// upstream is relayed as it came instead); no retries of its own.
	turns llm.Client

	counter   tokens.Counter
	loc       *time.Location
	placement messages.Placement

	// listed keeps the upstream's own model list briefly, per key it was
	// asked with (see upstreamModels).
	listedMu sync.Mutex
	listed   map[string]listedModels
}

// upstreamFor returns the workspace's upstream for its current loom.yaml.
// While loom.yaml is unchanged (the door hands back the same *File) and
// the server's engine is the same, the last one is reused; otherwise
// loom.yaml is parsed (from the door's cache).
func (g *Gateway) upstreamFor(ws *server.Workspace, eng *server.Engine) *upstream {
	f, err := ws.Door.Load(config.FileName)
	if err != nil {
		f = nil
	}
	g.mu.Lock()
	st := g.ups[ws]
	g.mu.Unlock()
	if st != nil && st.file == f && st.eng == eng && (err == nil || errors.Is(err, fs.ErrNotExist)) {
		return st
	}
	next := g.newUpstream(ws, eng, f)
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur := g.ups[ws]; cur != st && cur != nil { // another request got there first
		return cur
	}
	g.ups[ws] = next
	return next
}

func (g *Gateway) newUpstream(ws *server.Workspace, eng *server.Engine, f *workspace.File) *upstream {
	st := &upstream{file: f, eng: eng, loc: time.UTC}
	cfg, err := config.Load(ws.Door)
	if err != nil {
		st.err = err
		return st
	}
	st.cfg = cfg
	lc, err := llm.Resolve(cfg.LLM, nil)
	if err != nil {
		st.err = err
		return st
	}
	if err := lc.Validate(); err != nil {
		st.err = errors.New(err.Error() + "; configure llm: in loom.yaml or LOOM_LLM_* in the server's environment")
		return st
	}
	st.lc = lc
	st.base = strings.TrimRight(lc.BaseURL, "/")
	st.isAnthro = strings.EqualFold(lc.Provider, llm.ProviderAnthropic)
	switch {
	case st.base != "":
	case st.isAnthro:
		st.base = llm.AnthropicBaseURL
	default:
		st.base = llm.OpenAIBaseURL
	}
	st.host = redact.URL(st.base)
	if u, err := url.Parse(st.base); err == nil && u.Host != "" {
		st.host = u.Host
	}
	if st.isAnthro {
		// The gateway relays a 429 with its Retry-After: no retries of
		// its own, and the gateway's client (no redirects followed).
		gc := lc
		gc.MaxRetries = -1
		if st.anthropic, err = llm.New(gc, llm.WithHTTPClient(g.hc)); err != nil {
			st.err = err
			return st
		}
		st.turns = st.anthropic
	} else {
		gc := lc
		gc.MaxRetries = -1
		if st.turns, err = llm.New(gc, llm.WithHTTPClient(g.hc)); err != nil {
			st.err = err
			return st
		}
	}
	st.counter = server.Counter(nil, "", lc.Model)
	rt, _ := session.RuntimeFromConfig(cfg) // an unknown zone stays UTC here, as before
	st.loc, st.placement = rt.Location, rt.Placement
	return st
}

// unusable answers a request on a workspace whose llm: section cannot be
// used.
func unusable(w http.ResponseWriter, st *upstream) {
	var ce *config.Error
	if errors.As(st.err, &ce) {
		writeError(w, http.StatusUnprocessableEntity, "invalid_request_error", "config_invalid", "", "%v", st.err)
		return
	}
	writeError(w, http.StatusServiceUnavailable, "server_error", "upstream_not_configured", "", "%v", redact.String(st.err.Error()))
}

// clientKey is the client's own key, which the gateway sends on under
// gateway.forward_auth: true. It sends one only when loom has no key of its
// own, never the server's bearer token (under --token-env the client's
// Authorization is that token), and only to an endpoint the operator let
// keys go to (llm.KeyMayGo: the official endpoints, LOOM_LLM_BASE_URL,
// LOOM_ALLOWED_ENDPOINTS). loom.yaml may turn forwarding on; it cannot
// choose where the key goes. An error means the client sent a key the rule
// keeps back.
func (g *Gateway) clientKey(r *http.Request, st *upstream) (string, error) {
	if st.lc.APIKey != "" || !st.cfg.Gateway.ForwardsAuth() {
		return "", nil
	}
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	var tok string
	switch {
	case len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix):
		tok = strings.TrimSpace(h[len(prefix):])
	case h == "":
		tok = strings.TrimSpace(r.Header.Get("X-Api-Key")) // an Anthropic client's
	}
	if tok == "" || g.s.IsOwnToken(tok) {
		return "", nil
	}
	if err := llm.KeyMayGo(st.lc, nil); err != nil {
		return "", err
	}
	return tok, nil
}

// keyRefused answers a request whose key clientKey kept back.
func keyRefused(w http.ResponseWriter, err error) {
	writeError(w, http.StatusForbidden, "permission_error", "forward_auth_refused", "", "%v", redact.String(err.Error()))
}
