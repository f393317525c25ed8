package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// Providers a Config may name.
const (
	ProviderOpenAI    = "openai" // any OpenAI-compatible Chat Completions endpoint
	ProviderAnthropic = "anthropic"
)

// Environment variables read by FromEnv.
const (
	EnvProvider = "LOOM_LLM_PROVIDER"
	EnvBaseURL  = "LOOM_LLM_BASE_URL"
	EnvAPIKey   = "LOOM_LLM_API_KEY"
	EnvModel    = "LOOM_LLM_MODEL"
)

// Config says which endpoint to call and how patiently. loom.yaml fills it
// (the llm: section); FromEnv lets the environment override it.
type Config struct {
	Provider string `yaml:"provider" json:"provider"` // "openai" (default) or "anthropic"
	BaseURL  string `yaml:"base_url" json:"base_url"` // e.g. http://localhost:11434/v1 for Ollama
	APIKey   string `yaml:"api_key" json:"-"`
	Model    string `yaml:"model" json:"model"`
	// ExtractModel and ConsolidateModel, when set, are used for the memory
	// calls instead of Model (a small model is usually enough).
	ExtractModel     string `yaml:"extract_model" json:"extract_model,omitempty"`
	ConsolidateModel string `yaml:"consolidate_model" json:"consolidate_model,omitempty"`
	// MaxTokens bounds a reply when a Request does not; Anthropic requires it.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// Timeout bounds one attempt, streaming included. Default 2 minutes.
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// MaxRetries is how many times a 429, a 5xx, a timeout or a refused
	// connection is retried. Default 2; negative means none.
	MaxRetries int `yaml:"max_retries" json:"max_retries,omitempty"`
	// NoJSONSchema stops structured-output requests for endpoints that reject
	// them; callers then parse the reply text.
	NoJSONSchema bool `yaml:"no_json_schema" json:"no_json_schema,omitempty"`

	// Backoff returns the wait before retry n (1-based) when the server gave
	// no Retry-After. Default: 500ms doubling, at most 8s.
	Backoff func(n int) time.Duration `yaml:"-" json:"-"`
	// Sleep waits d or until ctx ends; tests replace it to run instantly.
	Sleep func(ctx context.Context, d time.Duration) error `yaml:"-" json:"-"`
	// MaxRetryAfter caps how long a server's Retry-After is honoured.
	// Default 60s.
	MaxRetryAfter time.Duration `yaml:"-" json:"-"`
	// HTTPClient, when set, carries the requests.
	HTTPClient *http.Client `yaml:"-" json:"-"`
}

// ErrNotConfigured means no endpoint or model was given.
var ErrNotConfigured = errors.New("no model endpoint configured")

// Help explains how to configure an endpoint, for CLI messages.
const Help = `set the model endpoint in loom.yaml:

  llm:
    provider: openai            # or anthropic
    base_url: https://api.openai.com/v1
    model: gpt-4o-mini

or in the environment: LOOM_LLM_BASE_URL, LOOM_LLM_API_KEY, LOOM_LLM_MODEL
(and LOOM_LLM_PROVIDER=anthropic for Claude). A local Ollama works with
LOOM_LLM_BASE_URL=http://localhost:11434/v1 LOOM_LLM_MODEL=llama3.2`

// FromEnv returns c with every field whose LOOM_LLM_* variable is set
// replaced by the variable's value.
func FromEnv(c Config) Config { return fromLookup(c, os.LookupEnv) }

func fromLookup(c Config, lookup func(string) (string, bool)) Config {
	set := func(dst *string, key string) {
		if v, ok := lookup(key); ok && strings.TrimSpace(v) != "" {
			*dst = strings.TrimSpace(v)
		}
	}
	set(&c.Provider, EnvProvider)
	set(&c.BaseURL, EnvBaseURL)
	set(&c.APIKey, EnvAPIKey)
	set(&c.Model, EnvModel)
	return c
}

// Validate reports what is missing or wrong in c.
func (c Config) Validate() error {
	switch strings.ToLower(c.Provider) {
	case "", ProviderOpenAI, ProviderAnthropic:
	default:
		return fmt.Errorf("llm: provider %q: want %q or %q", c.Provider, ProviderOpenAI, ProviderAnthropic)
	}
	if c.Model == "" {
		return fmt.Errorf("%w: model is empty", ErrNotConfigured)
	}
	if c.BaseURL == "" && c.APIKey == "" {
		// Without either there is nothing to call: the SDK default URL
		// would need a key.
		return fmt.Errorf("%w: base_url and api_key are both empty", ErrNotConfigured)
	}
	return nil
}

// New returns the Client c describes.
func New(c Config) (Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	if strings.EqualFold(c.Provider, ProviderAnthropic) {
		return newAnthropic(c), nil
	}
	return newOpenAI(c), nil
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 2
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 4096
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = time.Minute
	}
	if c.Backoff == nil {
		c.Backoff = defaultBackoff
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
	return c
}

func defaultBackoff(n int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < n && d < 8*time.Second; i++ {
		d *= 2
	}
	return min(d, 8*time.Second)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endpoint names where requests go, for error messages.
func (c Config) endpoint() string {
	if c.BaseURL != "" {
		return strings.TrimRight(c.BaseURL, "/")
	}
	if strings.EqualFold(c.Provider, ProviderAnthropic) {
		return "https://api.anthropic.com"
	}
	return "https://api.openai.com/v1"
}
