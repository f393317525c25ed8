package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// What keeps a web page from driving a loom server on the operator's own
// machine (see the README's "Security model"):
//
//   - the Host check: a request is answered only when its Host names a
//     loopback address ("localhost", 127.0.0.1, [::1], any port) or one of
//     Options.AllowedHosts, so a page whose DNS name rebinds to 127.0.0.1
//     gets 421 before any handler runs;
//   - the cross-site check: a request that changes state (any method but
//     GET, HEAD, OPTIONS) from another origin, as the browser says with
//     Sec-Fetch-Site or Origin, is refused with 403 (net/http's
//     CrossOriginProtection), unless Options.CORSOrigins names that origin;
//   - the JSON check: such a request with a body must say application/json
//     (a form or text/plain body is what another site can send without
//     asking), unless it carries a form token the server minted for one of
//     its own pages (FormToken), which the inspector's forms send;
//   - CORS headers only for an origin in Options.CORSOrigins.

// FormTokenHeader carries a form token (see [Server.FormToken]).
const FormTokenHeader = "X-Loom-Form-Token"

// hostAllowed reports whether a request's Host is one the server answers
// to.
func (s *Server) hostAllowed(hostport string) bool {
	host := strings.ToLower(hostport)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.allowedHosts {
		if a == "*" || a == host || a == strings.ToLower(hostport) {
			return true
		}
	}
	return false
}

// normalHosts lowers and trims the --allowed-hosts entries; one with a
// port matches only that port.
func normalHosts(in []string) []string {
	var out []string
	for _, h := range in {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			out = append(out, strings.TrimSuffix(h, "."))
		}
	}
	return out
}

// checkOrigins returns the CORS origins given, each a scheme and host
// (and port) with nothing after.
func checkOrigins(in []string) ([]string, error) {
	var out []string
	for _, o := range in {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return nil, &originError{o}
		}
		out = append(out, u.Scheme+"://"+strings.ToLower(u.Host))
	}
	return out, nil
}

type originError struct{ origin string }

func (e *originError) Error() string {
	return "server: CORS origin " + e.origin + " is not an origin such as https://app.example.com"
}

// corsAllowed reports whether origin was named in Options.CORSOrigins.
func (s *Server) corsAllowed(origin string) bool {
	for _, o := range s.corsOrigins {
		if strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

// FormToken returns a new token for a page the server serves, which the
// page's forms send back in the X-Loom-Form-Token header: a random nonce
// and its HMAC under a key made when the server started. Another site
// cannot read the page, so it cannot send one.
func (s *Server) FormToken() string {
	var nonce [16]byte
	rand.Read(nonce[:])
	return hex.EncodeToString(nonce[:]) + hex.EncodeToString(s.formMAC(nonce[:]))
}

func (s *Server) formMAC(nonce []byte) []byte {
	m := hmac.New(sha256.New, s.formKey[:])
	m.Write(nonce)
	return m.Sum(nil)[:16]
}

// ValidFormToken reports whether tok is a token FormToken made.
func (s *Server) ValidFormToken(tok string) bool {
	raw, err := hex.DecodeString(tok)
	if err != nil || len(raw) != 32 {
		return false
	}
	return hmac.Equal(raw[16:], s.formMAC(raw[:16]))
}

// jsonBody reports whether a Content-Type names JSON (application/json,
// or a +json type such as application/merge-patch+json).
func jsonBody(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// guard applies the Host, CORS and cross-site checks to r, before
// authentication; it answers (in the shape the server's error shaper
// gives the path) and returns false when r is refused.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) bool {
	if !s.hostAllowed(r.Host) {
		s.problem(w, r, Errorf(http.StatusMisdirectedRequest, CodeHostNotAllowed,
			"this server does not answer to Host %q: only loopback names, and those given with --allowed-hosts", limitText(r.Host)))
		return false
	}
	origin := r.Header.Get("Origin")
	if origin != "" && s.corsAllowed(origin) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "X-Request-Id, X-Loom-Session, X-Loom-Prompt-Tokens, X-Loom-Prefix-Sha256, X-Loom-Dropped, X-Loom-Cache-Break, Retry-After")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id, X-Loom-Session, X-Loom-Channel, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-Id, X-Api-Key, Anthropic-Version, Anthropic-Beta")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return false
		}
	}
	if safeMethod(r.Method) {
		return true
	}
	if err := s.crossOrigin.Check(r); err != nil {
		s.problem(w, r, Errorf(http.StatusForbidden, CodeCrossOrigin,
			"a request that changes state must come from this server's own pages or a client that is not a browser (%v); --cors-origin lets a named origin in", err))
		return false
	}
	return true
}

// guardBody refuses, after authentication, a state-changing request whose
// body is not JSON and carries no form token of the server's.
func (s *Server) guardBody(w http.ResponseWriter, r *http.Request) bool {
	if safeMethod(r.Method) || r.ContentLength == 0 || jsonBody(r.Header.Get("Content-Type")) || s.ValidFormToken(r.Header.Get(FormTokenHeader)) {
		return true
	}
	s.problem(w, r, Errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
		"the body must be sent as Content-Type: application/json, not %q", limitText(r.Header.Get("Content-Type"))))
	return false
}

// limitText keeps a client's header short in an error message.
func limitText(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
