package llm

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/redact"
)

// Environment variables Resolve reads. They belong to the operator, who
// runs loom; loom.yaml belongs to the workspace, which may come from
// anyone.
const (
	EnvProvider      = "LOOM_LLM_PROVIDER"
	EnvBaseURL       = "LOOM_LLM_BASE_URL"
	EnvAPIKey        = "LOOM_LLM_API_KEY"
	EnvModel         = "LOOM_LLM_MODEL"
	EnvMaxReplyBytes = "LOOM_LLM_MAX_REPLY_BYTES"
	// EnvAllowedKeyEnvs lists, comma- or space-separated, variables other
	// than LOOM_* that loom.yaml's api_key_env may name.
	EnvAllowedKeyEnvs = "LOOM_ALLOWED_KEY_ENVS"
	// EnvAllowedEndpoints lists, comma- or space-separated, hosts (host,
	// host:port or a URL) a key from the environment may be sent to
	// besides the official endpoints and LOOM_LLM_BASE_URL.
	EnvAllowedEndpoints = "LOOM_ALLOWED_ENDPOINTS"
)

// MaxWorkspaceReplyBytes is the largest reply bound loom.yaml may set;
// the operator's LOOM_LLM_MAX_REPLY_BYTES may set any.
const MaxWorkspaceReplyBytes = 64 << 20

// ErrSecretRefused means loom would not read a secret, or would not send
// it where the workspace asked, because the operator did not allow it.
var ErrSecretRefused = errors.New("secret refused")

// Env looks a variable up, as os.LookupEnv does.
type Env func(key string) (string, bool)

// Resolve turns loom.yaml's llm section and the operator's environment
// (os.LookupEnv when env is nil) into the Config to call. The LOOM_LLM_*
// variables override the file. It applies the secrets rule:
//
//   - api_key_env may name only a LOOM_* variable, or one the operator
//     listed in LOOM_ALLOWED_KEY_ENVS;
//   - a key goes only to the provider's official endpoint (https), to
//     LOOM_LLM_BASE_URL, or to a host listed in LOOM_ALLOWED_ENDPOINTS.
//
// Anything else is an error wrapping ErrSecretRefused that says what to
// set. A workspace may name an endpoint; it cannot choose where a secret
// goes.
func Resolve(l config.LLMConfig, env Env) (Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	get := func(key string) string {
		v, _ := env(key)
		return strings.TrimSpace(v)
	}
	c := Config{Provider: l.Provider, BaseURL: l.BaseURL, Model: l.Model, Timeout: l.Timeout.Std(), MaxReplyBytes: l.MaxReplyBytes}
	for _, f := range []struct {
		dst *string
		key string
	}{{&c.Provider, EnvProvider}, {&c.BaseURL, EnvBaseURL}, {&c.Model, EnvModel}} {
		if v := get(f.key); v != "" {
			*f.dst = v
		}
	}
	if c.MaxReplyBytes > MaxWorkspaceReplyBytes {
		// The bound is what keeps memory in check against a hostile
		// endpoint, and the workspace may name that endpoint.
		return Config{}, fmt.Errorf("loom.yaml: llm.max_reply_bytes %d is over the %d a workspace may set; %s can set more",
			c.MaxReplyBytes, MaxWorkspaceReplyBytes, EnvMaxReplyBytes)
	}
	if v := get(EnvMaxReplyBytes); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return Config{}, fmt.Errorf("%s=%q: want a positive number of bytes", EnvMaxReplyBytes, v)
		}
		c.MaxReplyBytes = n
	}

	keyFrom := EnvAPIKey
	c.APIKey = get(EnvAPIKey)
	if c.APIKey == "" && l.APIKeyEnv != "" {
		keyFrom = l.APIKeyEnv
		if err := keyEnvMayBeRead("llm.api_key_env", l.APIKeyEnv, get); err != nil {
			return Config{}, err
		}
		c.APIKey = get(l.APIKeyEnv)
	}
	c.KeyEnv = keyFrom
	if c.APIKey == "" {
		return c, nil
	}
	if err := keyMayGo(c, get(EnvBaseURL), get(EnvAllowedEndpoints)); err != nil {
		return Config{}, fmt.Errorf("%w: the key from %s %v", ErrSecretRefused, keyFrom, err)
	}
	return c, nil
}

// keyEnvMayBeRead applies the first half of the secrets rule to the
// variable loom.yaml's field names: a LOOM_* one, or one the operator
// listed in LOOM_ALLOWED_KEY_ENVS.
func keyEnvMayBeRead(field, name string, get func(string) string) error {
	if strings.HasPrefix(name, "LOOM_") || listed(get(EnvAllowedKeyEnvs), func(s string) bool { return s == name }) {
		return nil
	}
	return fmt.Errorf("%w: loom.yaml: %s names %s; a workspace may name only LOOM_* variables, "+
		"so that it cannot read the operator's other secrets (to allow it, add %s to %s)",
		ErrSecretRefused, field, name, name, EnvAllowedKeyEnvs)
}

// EndpointKey applies Resolve's secrets rule to another OpenAI-compatible
// endpoint loom.yaml names (memory.embeddings): it returns the key held
// by the variable keyEnv, which loom.yaml's field names ("" is no key),
// when the workspace may read that variable and the key may go to
// baseURL: the official endpoint over https, LOOM_LLM_BASE_URL, or a host
// in LOOM_ALLOWED_ENDPOINTS. Anything else is an error wrapping
// ErrSecretRefused. env is os.LookupEnv when nil.
func EndpointKey(field, keyEnv, baseURL string, env Env) (string, error) {
	if env == nil {
		env = os.LookupEnv
	}
	get := func(key string) string {
		v, _ := env(key)
		return strings.TrimSpace(v)
	}
	if keyEnv == "" {
		return "", nil
	}
	if err := keyEnvMayBeRead(field, keyEnv, get); err != nil {
		return "", err
	}
	key := get(keyEnv)
	if key == "" {
		return "", nil
	}
	if err := keyMayGo(Config{Provider: "openai", BaseURL: baseURL}, get(EnvBaseURL), get(EnvAllowedEndpoints)); err != nil {
		return "", fmt.Errorf("%w: the key from %s %v", ErrSecretRefused, keyEnv, err)
	}
	return key, nil
}

// keyMayGo reports nil when c's endpoint may receive a key: the official
// endpoint over https, the operator's own base URL, or an allowed host.
func keyMayGo(c Config, envBase, allowed string) error {
	if c.BaseURL == "" || (envBase != "" && c.BaseURL == envBase) {
		return nil
	}
	u, err := parseBase(c)
	if err != nil {
		return fmt.Errorf("cannot go to %s: %v", redact.URL(c.BaseURL), err)
	}
	if u.Scheme == "https" && (u.Host == "api.openai.com" || u.Host == "api.anthropic.com") {
		return nil
	}
	if listed(allowed, func(entry string) bool { return hostMatches(entry, u) }) {
		return nil
	}
	return fmt.Errorf("is not sent to %s, which loom.yaml names: a key from the environment goes only to the "+
		"provider's official endpoint, to %s, or to a host listed in %s (add %s to send it there)",
		redact.URL(c.BaseURL), EnvBaseURL, EnvAllowedEndpoints, u.Host)
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

// parseBase checks c's base URL: absolute, http or https.
func parseBase(c Config) (*url.URL, error) {
	u, err := url.Parse(c.baseURL())
	if err != nil {
		return nil, fmt.Errorf("llm: base_url %s: %v", redact.URL(c.baseURL()), redact.String(err.Error()))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: base_url %s: want an http or https URL", redact.URL(c.baseURL()))
	}
	return u, nil
}

// Enabled reports whether a memory feature (extraction, consolidation)
// runs: as its enabled setting says when set, else whenever c names an
// endpoint, whether loom.yaml or the LOOM_LLM_* environment gave it.
func Enabled(setting *bool, c Config) bool {
	if setting != nil {
		return *setting
	}
	return c.Configured()
}

// KeyMayGo applies Resolve's rule for where a key may go to a key that did
// not come from the environment, a client's own that a gateway would pass
// on: nil when c's endpoint is the provider's official one over https,
// LOOM_LLM_BASE_URL, or a host listed in LOOM_ALLOWED_ENDPOINTS (env is
// os.LookupEnv when nil). Anything else is an error wrapping
// ErrSecretRefused; loom.yaml cannot widen the rule.
func KeyMayGo(c Config, env Env) error {
	if env == nil {
		env = os.LookupEnv
	}
	get := func(key string) string {
		v, _ := env(key)
		return strings.TrimSpace(v)
	}
	if err := keyMayGo(c, get(EnvBaseURL), get(EnvAllowedEndpoints)); err != nil {
		return fmt.Errorf("%w: the client's key %v", ErrSecretRefused, err)
	}
	return nil
}
