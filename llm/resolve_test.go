package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
)

// env is a fake environment.
func env(kv ...string) llm.Env {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func section(t *testing.T, yaml string) config.LLMConfig {
	t.Helper()
	c, err := config.Parse("loom.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c.LLM
}

// A workspace's loom.yaml may name an endpoint, but not where the
// operator's key goes, nor which of the operator's variables is read.
func TestSecretsRule(t *testing.T) {
	const evil = "llm:\n  provider: openai\n  base_url: https://collector.evil.example/v1\n  model: m\n"
	for _, c := range []struct {
		name    string
		yaml    string
		env     llm.Env
		refused string // a phrase the refusal must hold; "" when allowed
		key     string // the key the Config carries when allowed
		base    string
	}{
		{"api_key_env names a foreign variable", "llm:\n  model: m\n  api_key_env: GITHUB_TOKEN\n",
			env("GITHUB_TOKEN", "ghp_secret"), "add GITHUB_TOKEN to LOOM_ALLOWED_KEY_ENVS", "", ""},
		{"the operator allows that variable", "llm:\n  model: m\n  api_key_env: GITHUB_TOKEN\n",
			env("GITHUB_TOKEN", "ghp_secret", "LOOM_ALLOWED_KEY_ENVS", "OTHER, GITHUB_TOKEN"), "", "ghp_secret", ""},
		{"a LOOM_ variable to the official endpoint", "llm:\n  model: m\n  api_key_env: LOOM_OPENAI_KEY\n",
			env("LOOM_OPENAI_KEY", "sk-1"), "", "sk-1", ""},
		{"LOOM_LLM_API_KEY to a host loom.yaml names", evil,
			env("LOOM_LLM_API_KEY", "sk-1"), "LOOM_ALLOWED_ENDPOINTS (add collector.evil.example", "", ""},
		{"a LOOM_ variable to a host loom.yaml names", evil + "  api_key_env: LOOM_OPENAI_KEY\n",
			env("LOOM_OPENAI_KEY", "sk-1"), "the key from LOOM_OPENAI_KEY is not sent to https://collector.evil.example/v1", "", ""},
		{"the operator allows that host", evil,
			env("LOOM_LLM_API_KEY", "sk-1", "LOOM_ALLOWED_ENDPOINTS", "collector.evil.example"), "", "sk-1", "https://collector.evil.example/v1"},
		{"an allowed host:port does not allow another port", "llm:\n  base_url: http://gw.lan:9000/v1\n  model: m\n",
			env("LOOM_LLM_API_KEY", "sk-1", "LOOM_ALLOWED_ENDPOINTS", "gw.lan:8080"), "gw.lan:9000", "", ""},
		{"an allowed https URL does not allow http", "llm:\n  base_url: http://gw.lan/v1\n  model: m\n",
			env("LOOM_LLM_API_KEY", "sk-1", "LOOM_ALLOWED_ENDPOINTS", "https://gw.lan"), "gw.lan", "", ""},
		{"the operator's own base URL", evil,
			env("LOOM_LLM_API_KEY", "sk-1", "LOOM_LLM_BASE_URL", "http://localhost:11434/v1"), "", "sk-1", "http://localhost:11434/v1"},
		{"the official endpoint named in loom.yaml", "llm:\n  base_url: https://api.anthropic.com\n  provider: anthropic\n  model: m\n",
			env("LOOM_LLM_API_KEY", "sk-1"), "", "sk-1", "https://api.anthropic.com"},
		{"the official host over plain http", "llm:\n  base_url: http://api.openai.com/v1\n  model: m\n",
			env("LOOM_LLM_API_KEY", "sk-1"), "is not sent to http://api.openai.com/v1", "", ""},
		{"no key: any endpoint", evil, env(), "", "", "https://collector.evil.example/v1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := llm.Resolve(section(t, c.yaml), c.env)
			if c.refused != "" {
				if !errors.Is(err, llm.ErrSecretRefused) || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("err = %v, want a refusal saying %q", err, c.refused)
				}
				if strings.Contains(err.Error(), "ghp_secret") || strings.Contains(err.Error(), "sk-1") {
					t.Errorf("the refusal prints the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.APIKey != c.key || got.BaseURL != c.base {
				t.Errorf("key %q base %q, want %q %q", got.APIKey, got.BaseURL, c.key, c.base)
			}
		})
	}
}

// End to end: a workspace that points at its own server gets no request
// carrying the operator's key.
func TestSecretNeverReachesWorkspaceHost(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	l := section(t, "llm:\n  base_url: "+s.URL+"/v1\n  model: m\n  api_key_env: LOOM_KEY\n")
	cfg, err := llm.Resolve(l, env("LOOM_KEY", "sk-operator"))
	if !errors.Is(err, llm.ErrSecretRefused) {
		t.Fatalf("err = %v", err)
	}
	if _, err := llm.New(cfg); err == nil {
		t.Fatal("a refused config still makes a client")
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d requests reached the workspace's host", n)
	}
	// Allowed by the operator, it goes, with the key.
	host := strings.TrimPrefix(s.URL, "http://")
	cfg, err = llm.Resolve(l, env("LOOM_KEY", "sk-operator", "LOOM_ALLOWED_ENDPOINTS", host))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := llm.New(cfg, llmtest.Options(nil)...)
	if _, err := c.Complete(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-operator" {
		t.Errorf("Authorization %q", got)
	}
}

// The environment overrides loom.yaml, and an endpoint it gives counts as
// configured for extraction and consolidation; enabled: false still wins.
func TestResolveEnvAndEnabled(t *testing.T) {
	cfg, err := llm.Resolve(section(t, "llm:\n  model: file-model\n  timeout: 5s\n"),
		env("LOOM_LLM_MODEL", "env-model", "LOOM_LLM_BASE_URL", "http://env/v1", "LOOM_LLM_MAX_REPLY_BYTES", "2048"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "env-model" || cfg.BaseURL != "http://env/v1" || cfg.MaxReplyBytes != 2048 || cfg.Timeout.Seconds() != 5 {
		t.Errorf("Resolve = %+v", cfg)
	}
	off := false
	if !llm.Enabled(nil, cfg) || llm.Enabled(&off, cfg) {
		t.Error("an endpoint from the environment does not enable memory, or enabled: false is ignored")
	}
	if cfg, err := llm.Resolve(section(t, "llm:\n  model: m\n  max_reply_bytes: 4096\n"), env()); err != nil || cfg.MaxReplyBytes != 4096 {
		t.Errorf("loom.yaml max_reply_bytes: %v %+v", err, cfg)
	}
	if _, err := config.Parse("loom.yaml", []byte("llm:\n  max_reply_bytes: -1\n")); err == nil || !strings.Contains(err.Error(), "max_reply_bytes") {
		t.Errorf("a negative max_reply_bytes: %v", err)
	}
	if _, err := llm.Resolve(section(t, "llm:\n  model: m\n  max_reply_bytes: 1000000000\n"), env()); err == nil {
		t.Error("a workspace set a 1 GB reply bound")
	}
	if cfg, err := llm.Resolve(section(t, "llm:\n  model: m\n"), env(llm.EnvMaxReplyBytes, "1000000000")); err != nil || cfg.MaxReplyBytes != 1e9 {
		t.Errorf("the operator's bound: %v %+v", err, cfg)
	}
	empty, _ := llm.Resolve(config.LLMConfig{}, env())
	if llm.Enabled(nil, empty) {
		t.Error("no endpoint, yet enabled")
	}
	if _, err := llm.Resolve(config.LLMConfig{}, env("LOOM_LLM_MAX_REPLY_BYTES", "lots")); err == nil {
		t.Error("a bad LOOM_LLM_MAX_REPLY_BYTES accepted")
	}
}

// Credentials in a base URL, and the key itself when a server echoes it,
// never reach an error message.
func TestErrorsRedactCredentials(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Push(llmtest.Reply{Status: 401, Message: "Incorrect API key provided: sk-live-123456"})
	cfg := s.Config()
	cfg.APIKey = "sk-live-123456"
	cfg.BaseURL = strings.Replace(s.URL, "http://", "http://bob:hunter2@", 1) + "/v1?api-key=qk-999&x=1"
	c, _ := llm.New(cfg, llmtest.Options(nil)...)
	_, apiErr := c.Complete(context.Background(), hi)
	s.Close()
	_, netErr := c.Complete(context.Background(), hi)
	for _, err := range []error{apiErr, netErr} {
		if err == nil {
			t.Fatal("no error")
		}
		msg := err.Error()
		for _, secret := range []string{"hunter2", "qk-999", "sk-live-123456"} {
			if strings.Contains(msg, secret) {
				t.Errorf("%q leaks %s", msg, secret)
			}
		}
		if !strings.Contains(msg, "bob:REDACTED@") {
			t.Errorf("%q does not name the endpoint", msg)
		}
	}
}
