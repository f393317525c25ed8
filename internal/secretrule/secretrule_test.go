package secretrule

import (
	"errors"
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	env := map[string]string{"LOOM_K": "k1", "OTHER_K": "k2"}
	get := func(k string) string { return env[k] }
	for _, c := range []struct {
		keyEnv, base, allowed, envBase string
		want, err                      string
	}{
		{"", "http://evil.example/v1", "", "", "", ""},
		{"LOOM_NONE", "http://evil.example/v1", "", "", "", ""},
		{"LOOM_K", "https://api.openai.com/v1", "", "", "k1", ""},
		{"LOOM_K", "http://api.openai.com/v1", "", "", "", "is not sent to http://api.openai.com/v1"},
		{"LOOM_K", "http://evil.example/v1", "", "", "", "add evil.example to send it there"},
		{"LOOM_K", "http://evil.example:8080/v1", "evil.example", "", "k1", ""},
		{"LOOM_K", "http://evil.example:8080/v1", "evil.example:9090", "", "", "is not sent"},
		{"LOOM_K", "http://proxy.local/v1", "", "http://proxy.local/v1", "k1", ""},
		{"LOOM_K", "ftp://x/v1", "x", "", "", "want an http or https URL"},
		{"OTHER_K", "https://api.openai.com/v1", "", "", "", "names OTHER_K; a workspace may name only LOOM_* variables"},
	} {
		env[EnvAllowedEndpoints], env[EnvBaseURL] = c.allowed, c.envBase
		got, err := Key("memory.embeddings.api_key_env", c.keyEnv, c.base, get)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%+v: got %q, %v", c, got, err)
		case c.err != "" && (err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.err) || got != ""):
			t.Errorf("%+v: got %q, %v; want an error saying %q", c, got, err, c.err)
		}
	}
	env[EnvAllowedKeyEnvs] = "A, OTHER_K"
	if got, err := Key("f", "OTHER_K", "https://api.openai.com/v1", get); err != nil || got != "k2" {
		t.Errorf("an allowed variable: %q, %v", got, err)
	}
}
