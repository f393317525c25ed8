package llm_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/messages"
)

// A missing key names the variable to set, never asks for configuration
// the user already has; a custom endpoint without a key is said out loud,
// and its 401 says that no key was sent.
func TestMissingKeyNamesTheVariable(t *testing.T) {
	for _, tt := range []struct {
		name string
		l    config.LLMConfig
		want string
	}{
		{"official endpoint, api_key_env unset", config.LLMConfig{Model: "gpt-4o-mini", APIKeyEnv: "LOOM_OPENAI_KEY"}, "llm: no API key for https://api.openai.com/v1: set LOOM_OPENAI_KEY"},
		{"official endpoint, no api_key_env", config.LLMConfig{Model: "gpt-4o-mini"}, "llm: no API key for https://api.openai.com/v1: set LOOM_LLM_API_KEY"},
		{"anthropic", config.LLMConfig{Provider: "anthropic", Model: "claude-x", APIKeyEnv: "LOOM_CLAUDE"}, "llm: no API key for https://api.anthropic.com: set LOOM_CLAUDE"},
	} {
		c, err := llm.Resolve(tt.l, env())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		_, err = llm.New(c)
		var noKey *llm.NoKeyError
		if err == nil || err.Error() != tt.want || !errors.As(err, &noKey) || !errors.Is(err, llm.ErrNotConfigured) {
			t.Errorf("%s: %v, want %q (a NoKeyError, an ErrNotConfigured)", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "base_url") {
			t.Errorf("%s: the message asks for base_url: %v", tt.name, err)
		}
	}

	var sawAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAuth = append(sawAuth, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Missing bearer token"}}`))
	}))
	defer srv.Close()
	c, err := llm.Resolve(config.LLMConfig{Model: "m", BaseURL: srv.URL + "/v1", APIKeyEnv: "LOOM_HOSTED_KEY"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if w := llm.KeyWarning(c); !strings.Contains(w, "no API key") || !strings.Contains(w, "LOOM_HOSTED_KEY") || !strings.Contains(w, srv.URL) {
		t.Errorf("KeyWarning = %q", w)
	}
	cl, err := llm.New(c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Complete(context.Background(), llm.Request{Messages: []messages.Message{{Role: messages.RoleUser, Content: messages.Content{Text: "hi"}}}})
	if err == nil || !strings.Contains(err.Error(), "status 401: Missing bearer token (no API key was sent: set LOOM_HOSTED_KEY)") {
		t.Errorf("401 without a key: %v", err)
	}
	if len(sawAuth) == 0 || sawAuth[0] != "" {
		t.Errorf("Authorization sent: %q", sawAuth)
	}

	// With a key there is nothing to warn about.
	c, _ = llm.Resolve(config.LLMConfig{Model: "m", BaseURL: srv.URL + "/v1"}, env(llm.EnvAPIKey, "k", llm.EnvBaseURL, srv.URL+"/v1"))
	if w := llm.KeyWarning(c); w != "" {
		t.Errorf("KeyWarning with a key = %q", w)
	}
}

// The reference loom.yaml the README points to is one loom accepts as it
// is: its api_key_env is a variable a workspace may name.
func TestReferenceConfigKeyEnvAccepted(t *testing.T) {
	data, err := os.ReadFile("../config/testdata/config/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("loom.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Resolve(cfg.LLM, env(cfg.LLM.APIKeyEnv, "k")); err != nil {
		t.Errorf("the reference loom.yaml's llm section is refused: %v", err)
	}
}
