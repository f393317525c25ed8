package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/loomctx/loom/internal/redact"
)

// Providers a Config may name.
const (
	ProviderOpenAI    = "openai" // any OpenAI-compatible Chat Completions endpoint
	ProviderAnthropic = "anthropic"
)

// The official endpoints, where a key from the environment may always go.
const (
	OpenAIBaseURL    = "https://api.openai.com/v1"
	AnthropicBaseURL = "https://api.anthropic.com"
)

// DefaultMaxReplyBytes bounds a reply's text and tool arguments when the
// Config does not: 1 MiB, some 250,000 words, far past any sane reply.
const DefaultMaxReplyBytes = 1 << 20

// Config is the runtime description of one endpoint: which, with what key,
// how patiently. Resolve builds it from loom.yaml's llm section and the
// operator's environment; a program embedding loom may fill it directly.
// It has no YAML form: loom.yaml's schema lives in package config.
type Config struct {
	Provider string // "openai" (default) or "anthropic"
	BaseURL  string // e.g. http://localhost:11434/v1 for Ollama; "" is the provider's own
	APIKey   string
	// KeyEnv names the variable the key came from, or was looked for in
	// when there is none (Resolve sets it), for messages that say what to
	// set; "" means LOOM_LLM_API_KEY.
	KeyEnv string
	Model  string
	// ExtractModel and ConsolidateModel, when set, are used for the memory
	// calls instead of Model (a small model is usually enough).
	ExtractModel     string
	ConsolidateModel string
	// MaxTokens bounds a reply when a Request does not; Anthropic requires
	// it. Default 4096.
	MaxTokens int
	// Timeout bounds one attempt, streaming included. Default 2 minutes.
	Timeout time.Duration
	// MaxRetries is how many times a 429, a 5xx, a timeout, a refused
	// connection or a stream cut before its first text is retried.
	// Default 2; negative means none.
	MaxRetries int
	// MaxReplyBytes bounds the reply's text plus tool-call arguments,
	// checked as it streams: past it the call stops with ErrReplyTooLarge.
	// Default DefaultMaxReplyBytes.
	MaxReplyBytes int64
	// NoJSONSchema stops structured-output requests for endpoints that
	// reject them; callers then parse the reply text.
	NoJSONSchema bool
}

// ErrNotConfigured means no endpoint or model was given.
var ErrNotConfigured = errors.New("no model endpoint configured")

// Help explains how to configure an endpoint, for CLI messages.
const Help = `set the model endpoint in loom.yaml:

  llm:
    provider: openai            # or anthropic
    base_url: https://api.openai.com/v1
    model: gpt-4o-mini
    api_key_env: LOOM_OPENAI_KEY   # a LOOM_* variable holding the key

or in the environment: LOOM_LLM_BASE_URL, LOOM_LLM_API_KEY, LOOM_LLM_MODEL
(and LOOM_LLM_PROVIDER=anthropic for Claude). A local Ollama works with
LOOM_LLM_BASE_URL=http://localhost:11434/v1 LOOM_LLM_MODEL=llama3.2`

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
		// The official endpoint needs a key: say which variable to set,
		// not how to write the configuration the caller already has.
		return &NoKeyError{Endpoint: c.baseURL(), Var: c.keyVar()}
	}
	return nil
}

// keyVar is the variable the key comes from.
func (c Config) keyVar() string {
	if c.KeyEnv != "" {
		return c.KeyEnv
	}
	return EnvAPIKey
}

// NoKeyError means the endpoint needs an API key and none was set. It is
// an ErrNotConfigured: memory features stay off without a key.
type NoKeyError struct {
	Endpoint string // the endpoint that needs it
	Var      string // the variable to set
}

func (e *NoKeyError) Error() string {
	return fmt.Sprintf("llm: no API key for %s: set %s", e.Endpoint, e.Var)
}

// Is makes a NoKeyError an ErrNotConfigured.
func (e *NoKeyError) Is(target error) bool { return target == ErrNotConfigured }

// KeyWarning is a warning for a front end to print before calling c, or
// "": c sends no key to an endpoint of its own (which a local server such
// as Ollama does not need, but a hosted one answers with 401).
func KeyWarning(c Config) string {
	if c.APIKey != "" || c.BaseURL == "" {
		return ""
	}
	return fmt.Sprintf("no API key: requests to %s go without one (fine for a local server such as Ollama; set %s if it needs one)",
		redact.URL(c.BaseURL), c.keyVar())
}

// Configured reports whether c names an endpoint that can be called.
func (c Config) Configured() bool { return c.Validate() == nil }

// Option changes how a client behaves beyond its Config.
type Option func(*options)

type options struct {
	wait func(ctx context.Context, d time.Duration) error
	http *http.Client
}

// WithRetryWait replaces how the client waits between attempts: wait gets
// each delay the retry policy chose (jitter and Retry-After applied) and
// returns early with ctx's error. Tests use it to run retries instantly
// and record the delays.
func WithRetryWait(wait func(ctx context.Context, d time.Duration) error) Option {
	return func(o *options) { o.wait = wait }
}

// WithHTTPClient carries requests over hc instead of loom's own client.
// loom's own follows no redirect, so a key never leaves the host it was
// meant for; one given here should not either.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *options) { o.http = hc }
}

// New returns the Client c describes.
func New(c Config, opts ...Option) (Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if _, err := parseBase(c); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	o := options{wait: sleep, http: defaultHTTP}
	for _, opt := range opts {
		opt(&o)
	}
	t := &transport{cfg: c, http: o.http, wait: o.wait, endpoint: c.endpoint()}
	if strings.EqualFold(c.Provider, ProviderAnthropic) {
		return &anthropicClient{t: t}, nil
	}
	return &openaiClient{t: t}, nil
}

// defaultHTTP follows no redirect: an API answers a POST in place, and a
// redirect would carry the key's headers (x-api-key among them, which Go
// does not strip) to another host.
var defaultHTTP = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
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
	if c.MaxReplyBytes <= 0 {
		c.MaxReplyBytes = DefaultMaxReplyBytes
	}
	return c
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

// baseURL is where requests go, without a trailing slash.
func (c Config) baseURL() string {
	if c.BaseURL != "" {
		return strings.TrimRight(c.BaseURL, "/")
	}
	if strings.EqualFold(c.Provider, ProviderAnthropic) {
		return AnthropicBaseURL
	}
	return OpenAIBaseURL
}

// endpoint names where requests go, for error messages, with credentials
// redacted.
func (c Config) endpoint() string { return redact.URL(c.baseURL()) }
