package gateway

import (
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/loomctx/loom/gateway/protocol"
	"github.com/loomctx/loom/internal/redact"
	"github.com/loomctx/loom/llm"
)

// What passes back from an upstream to the client: its headers without the
// ones that belong to the upstream's own connection, its cookies or its
// identity, and its error bodies without any credential they echo.

// droppedHeaders are never relayed from an upstream's reply: hop-by-hop
// and per-connection headers, lengths and encodings the gateway sets
// itself, cookies (the client would store them for loom's origin), the
// upstream's authentication challenges, its server identity, and its
// request id (relayed as X-Upstream-Request-Id, so loom's own stays).
var droppedHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Transfer-Encoding": true, "Te": true,
	"Trailer": true, "Upgrade": true, "Content-Length": true, "Content-Encoding": true,
	"Set-Cookie": true, "Set-Cookie2": true,
	"Www-Authenticate": true, "Proxy-Authenticate": true, "Authorization": true, "Proxy-Authorization": true,
	"Authentication-Info": true, "Proxy-Authentication-Info": true,
	"Server": true, "X-Powered-By": true, "Via": true, "Alt-Svc": true,
	"X-Request-Id": true,
}

// relayHeaders copies an upstream reply's headers to dst, leaving out
// droppedHeaders and any header its Connection header names.
func relayHeaders(dst, src http.Header) {
	var perConn map[string]bool
	for _, v := range src.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				if perConn == nil {
					perConn = map[string]bool{}
				}
				perConn[http.CanonicalHeaderKey(name)] = true
			}
		}
	}
	for k, vs := range src {
		if droppedHeaders[k] || perConn[k] {
			continue
		}
		dst[k] = vs
	}
	if id := src.Get("X-Request-Id"); id != "" {
		dst.Set("X-Upstream-Request-Id", id)
	}
}

// maxErrorBody bounds an upstream error body the gateway relays.
const maxErrorBody = 1 << 20

// relayError writes an upstream's error reply to the client: its status,
// and its body (up to maxErrorBody) with the keys sent and any credential
// it writes out masked (see redact.Credentials). The headers were relayed
// already.
func relayError(w http.ResponseWriter, resp *http.Response, secrets ...string) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	clean := redact.Credentials(string(body), secrets...)
	w.Header().Set("Content-Length", strconv.Itoa(len(clean)))
	w.WriteHeader(resp.StatusCode)
	io.WriteString(w, clean)
}

// sentKeys are the credentials a request to the upstream carried: the
// operator's key, and the client's forwarded one.
func sentKeys(st *upstream, clientKey string) []string {
	return []string{st.lc.APIKey, clientKey}
}

// replyLimit is the most of one reply the gateway relays and keeps:
// llm.max_reply_bytes (LOOM_LLM_MAX_REPLY_BYTES), 1 MiB by default, as on
// the Anthropic wire, where llm's client applies it.
func replyLimit(st *upstream) int {
	if st.lc.MaxReplyBytes > 0 {
		return int(st.lc.MaxReplyBytes)
	}
	return llm.DefaultMaxReplyBytes
}

// replyBodyLimit bounds a whole non-streamed reply read to relay and save:
// room for the text escaped, and the envelope (llm's rule for a JSON
// reply).
func replyBodyLimit(st *upstream) int64 { return 4*int64(replyLimit(st)) + 1<<20 }

// cutNote is the reason saved with a reply cut at the bound.
func cutNote(limit int) string {
	return "reply longer than " + strconv.Itoa(limit) + " bytes (llm.max_reply_bytes): saved up to there"
}

// maxRequestMessages bounds the messages of one request, on every wire
// (protocol.MaxMessages). A decoded message takes 112 bytes before its
// text (messages.Message), over three times what a tiny one takes in the
// body, so without a bound a body of a million tiny messages held some 36
// times its size while decoding; with it, decoding holds at most 4 times
// the body (TestDecodePeakMemory). An agent's history is compacted long
// before this.
const maxRequestMessages = protocol.MaxMessages

func tooManyMessages() error {
	return ferr("messages", "more than %d messages in one request; compact the history", maxRequestMessages)
}
