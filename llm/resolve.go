package llm

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/redact"
	"github.com/loomctx/loom/internal/secretrule"
)

// Environment variables Resolve reads. They belong to the operator, who
// runs loom; loom.yaml belongs to the workspace, which may come from
// anyone.
const (
	EnvProvider      = "LOOM_LLM_PROVIDER"
	EnvBaseURL       = secretrule.EnvBaseURL
	EnvAPIKey        = "LOOM_LLM_API_KEY"
	EnvModel         = "LOOM_LLM_MODEL"
	EnvMaxReplyBytes = "LOOM_LLM_MAX_REPLY_BYTES"
	// EnvAllowedKeyEnvs and EnvAllowedEndpoints are the operator's
	// allow-lists of the secrets rule (package secretrule).
	EnvAllowedKeyEnvs   = secretrule.EnvAllowedKeyEnvs
	EnvAllowedEndpoints = secretrule.EnvAllowedEndpoints
)

// MaxWorkspaceReplyBytes is the largest reply bound loom.yaml may set;
// the operator's LOOM_LLM_MAX_REPLY_BYTES may set any.
const MaxWorkspaceReplyBytes = 64 << 20

// ErrSecretRefused means loom would not read a secret, or would not send
// it where the workspace asked, because the operator did not allow it.
var ErrSecretRefused = secretrule.ErrRefused

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
		if err := secretrule.MayRead("llm.api_key_env", l.APIKeyEnv, get); err != nil {
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

// keyMayGo is secretrule.MayGo for c's endpoint.
func keyMayGo(c Config, envBase, allowed string) error {
	return secretrule.MayGo(c.BaseURL, envBase, allowed)
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
