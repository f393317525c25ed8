// Package secretrule is loom's one rule for secrets a workspace points
// at: loom.yaml may name an endpoint and the variable that holds its key,
// but only the operator, through the environment, decides which variables
// a workspace may read and where a key may go. Package llm applies it to
// llm: and the gateway's clients' keys, package embedding to
// memory.embeddings.
package secretrule

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/loomctx/loom/internal/redact"
)

// The operator's variables the rule reads.
const (
	// EnvBaseURL is the operator's own endpoint: a key may go there.
	EnvBaseURL = "LOOM_LLM_BASE_URL"
	// EnvAllowedKeyEnvs lists, comma- or space-separated, variables other
	// than LOOM_* that loom.yaml may name as holding a key.
	EnvAllowedKeyEnvs = "LOOM_ALLOWED_KEY_ENVS"
	// EnvAllowedEndpoints lists, comma- or space-separated, hosts (host,
	// host:port or a URL) a key from the environment may be sent to
	// besides the official endpoints and LOOM_LLM_BASE_URL.
	EnvAllowedEndpoints = "LOOM_ALLOWED_ENDPOINTS"
)

// ErrRefused means loom would not read a secret, or would not send it
// where the workspace asked, because the operator did not allow it.
var ErrRefused = errors.New("secret refused")

// MayRead returns nil when a workspace may read the variable name, which
// loom.yaml's field names: a LOOM_* one, or one listed in
// LOOM_ALLOWED_KEY_ENVS (get reads the operator's environment). Anything
// else is an error wrapping ErrRefused that says how to allow it.
func MayRead(field, name string, get func(string) string) error {
	if strings.HasPrefix(name, "LOOM_") || listed(get(EnvAllowedKeyEnvs), func(s string) bool { return s == name }) {
		return nil
	}
	return fmt.Errorf("%w: loom.yaml: %s names %s; a workspace may name only LOOM_* variables, "+
		"so that it cannot read the operator's other secrets (to allow it, add %s to %s)",
		ErrRefused, field, name, name, EnvAllowedKeyEnvs)
}

// MayGo returns nil when a key may be sent to base: "" (the provider's
// default), the operator's envBase, the official OpenAI or Anthropic
// endpoint over https, or a host listed in allowed (the value of
// LOOM_ALLOWED_ENDPOINTS). The error completes "the key from X ...".
func MayGo(base, envBase, allowed string) error {
	if base == "" || (envBase != "" && base == envBase) {
		return nil
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("cannot go to %s: want an http or https URL", redact.URL(base))
	}
	if u.Scheme == "https" && (u.Host == "api.openai.com" || u.Host == "api.anthropic.com") {
		return nil
	}
	if listed(allowed, func(entry string) bool { return hostMatches(entry, u) }) {
		return nil
	}
	return fmt.Errorf("is not sent to %s, which loom.yaml names: a key from the environment goes only to the "+
		"provider's official endpoint, to %s, or to a host listed in %s (add %s to send it there)",
		redact.URL(base), EnvBaseURL, EnvAllowedEndpoints, u.Host)
}

// Key is the rule for an endpoint loom.yaml names at base with its key in
// the variable keyEnv, which loom.yaml's field names: "" when keyEnv is
// "" or empty, the key when the workspace may read keyEnv and the key may
// go to base, else an error wrapping ErrRefused.
func Key(field, keyEnv, base string, get func(string) string) (string, error) {
	if keyEnv == "" {
		return "", nil
	}
	if err := MayRead(field, keyEnv, get); err != nil {
		return "", err
	}
	key := get(keyEnv)
	if key == "" {
		return "", nil
	}
	if err := MayGo(base, get(EnvBaseURL), get(EnvAllowedEndpoints)); err != nil {
		return "", fmt.Errorf("%w: the key from %s %v", ErrRefused, keyEnv, err)
	}
	return key, nil
}

// hostMatches reports whether an allow-list entry (host, host:port, or a
// URL) names u's host. An entry without a port allows every port; one with
// a scheme allows only that scheme.
func hostMatches(entry string, u *url.URL) bool {
	if strings.Contains(entry, "://") {
		e, err := url.Parse(entry)
		if err != nil || e.Scheme != u.Scheme {
			return false
		}
		entry = e.Host
	}
	entry = strings.ToLower(strings.TrimRight(entry, "/"))
	if entry == "" {
		return false
	}
	if strings.Contains(strings.TrimPrefix(entry, "["), ":") && !strings.HasSuffix(entry, "]") {
		return entry == strings.ToLower(u.Host)
	}
	return strings.Trim(entry, "[]") == strings.ToLower(u.Hostname())
}

// listed reports whether any comma- or space-separated item of list
// satisfies match.
func listed(list string, match func(string) bool) bool {
	for _, item := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if match(item) {
			return true
		}
	}
	return false
}
