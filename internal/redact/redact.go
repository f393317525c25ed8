// Package redact removes credentials from text before it reaches an error
// message or a log: the password of a URL's userinfo, and query parameters
// that carry a key or a token.
package redact

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Mask replaces what is removed.
const Mask = "REDACTED"

// urlPattern finds URLs inside free text: a scheme, "://", then everything
// up to a space or a quote.
var urlPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>` + "`" + `]+`) })

// String returns s with every URL in it redacted (see URL). Text without
// "://" is returned as it is, without a regexp pass.
func String(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlPattern().ReplaceAllStringFunc(s, URL)
}

// URL returns raw with the userinfo password and every secret query
// parameter (see SecretParam) replaced by Mask. A URL that does not parse
// has everything after "://" up to the host's end masked if it holds an
// "@", and is otherwise returned unchanged.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return maskUnparsed(raw)
	}
	changed := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
			changed = true
		}
	}
	if u.RawQuery != "" {
		q, qerr := url.ParseQuery(u.RawQuery)
		if qerr != nil {
			// Mask values by hand: the query does not parse, but a
			// key=value pair in it may still be a secret.
			u.RawQuery = maskQuery(u.RawQuery)
			changed = true
		} else {
			for k, vs := range q {
				if SecretParam(k) {
					for i := range vs {
						vs[i] = Mask
					}
					changed = true
				}
			}
			if changed {
				u.RawQuery = encodeQuery(u.RawQuery, q)
			}
		}
	}
	if !changed {
		return raw
	}
	return u.String()
}

// SecretParam reports whether a query parameter name carries a credential:
// key, api-key, api_key, apikey, token, access_token, secret, password,
// sig, signature, and any name ending in "key" or "token".
func SecretParam(name string) bool {
	n := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	switch n {
	case "key", "apikey", "api_key", "token", "access_token", "secret", "client_secret", "password", "sig", "signature", "auth":
		return true
	}
	return strings.HasSuffix(n, "key") || strings.HasSuffix(n, "token") || strings.HasSuffix(n, "secret")
}

// encodeQuery writes q back in the order of the original query, so only
// the masked values change.
func encodeQuery(orig string, q url.Values) string {
	var b strings.Builder
	seen := map[string]int{}
	for _, pair := range strings.Split(orig, "&") {
		if pair == "" {
			continue
		}
		k, _, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		vs := q[key]
		i := seen[key]
		seen[key]++
		if SecretParam(key) && i < len(vs) {
			b.WriteString(k + "=" + Mask)
			continue
		}
		b.WriteString(pair)
	}
	return b.String()
}

func maskQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok && SecretParam(k) {
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// maskUnparsed handles a URL url.Parse refused: userinfo is cut by hand,
// and secret parameters are masked.
func maskUnparsed(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		user, _, _ := strings.Cut(rest[:at], ":")
		rest = user + ":" + Mask + rest[at:]
	}
	if path, q, ok := strings.Cut(rest, "?"); ok {
		rest = path + "?" + maskQuery(q)
	}
	return scheme + "://" + rest
}

// credentialPattern finds a credential written out in free text: a bearer
// or basic token, or the value after an authorization, api-key, x-api-key
// or token label (as a header line, a JSON member or a query pair).
var credentialPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+|\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic)\s+)?|\b(?:x-)?api[-_]?key["']?\s*[:=]\s*["']?|\b(?:access_|id_)?token["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/=\-]{4,}`)
})

// Credentials returns s with every secret given replaced by Mask, then
// every credential written out in it (see credentialPattern) and every URL
// secret (see String) masked too. It is for text loom relays from
// somewhere else, an upstream's error body say, which may echo the key it
// was sent. Secrets shorter than 4 bytes are not searched for: they would
// mask ordinary text.
func Credentials(s string, secrets ...string) string {
	for _, k := range secrets {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, Mask)
		}
	}
	s = credentialPattern().ReplaceAllString(s, "${1}"+Mask)
	return String(s)
}
