package embedding_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/embedding"
	"github.com/loomctx/loom/embedding/embeddingtest"
	"github.com/loomctx/loom/llm"
)

func TestClientEmbeds(t *testing.T) {
	f := embeddingtest.New(t)
	c := embedding.NewClient(embedding.ClientConfig{BaseURL: f.BaseURL(), Model: "fake"})
	got, err := c.Embed(context.Background(), []string{"red car", "blue sky"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]) != embeddingtest.Dims {
		t.Fatalf("got %d vectors of %d", len(got), len(got[0]))
	}
	for i, text := range []string{"red car", "blue sky"} {
		want := f.Vector(text)
		for j := range want {
			if got[i][j] != want[j] {
				t.Fatalf("vector %d value %d: %v, want %v", i, j, got[i][j], want[j])
			}
		}
	}
	if c.Model() != "fake" {
		t.Errorf("model key %q", c.Model())
	}
	if d := embedding.NewClient(embedding.ClientConfig{BaseURL: f.BaseURL(), Model: "fake", Dimensions: 64}); d.Model() != "fake@64" {
		t.Errorf("model key with dimensions %q", d.Model())
	}
}

// Every reply is untrusted: each of these is refused with an error that
// says what was wrong, and nothing is returned.
func TestClientRefusesHostileReplies(t *testing.T) {
	f := embeddingtest.New(t)
	vec := func(n int, v string) string { return "[" + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "]" }
	for _, c := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"not JSON", "<html>hello</html>", 200, "not the JSON of an embeddings list"},
		{"NaN literal", `{"data":[{"index":0,"embedding":[NaN,1]}]}`, 200, "not the JSON of an embeddings list"},
		{"NaN as a string", `{"data":[{"index":0,"embedding":["NaN",1]}]}`, 200, "not the JSON of an embeddings list"},
		{"out of float32 range", `{"data":[{"index":0,"embedding":[1e39,1]}]}`, 200, "out of float32's range"},
		{"all zeros", `{"data":[{"index":0,"embedding":[0,0,0]}]}`, 200, "all 3 values are 0"},
		{"no vectors", `{"data":[]}`, 200, "0 vectors for 1 texts"},
		{"too many vectors", `{"data":[{"embedding":[1]},{"embedding":[1]}]}`, 200, "2 vectors for 1 texts"},
		{"index out of range", `{"data":[{"index":3,"embedding":[1]}]}`, 200, "has index 3"},
		{"empty vector", `{"data":[{"index":0,"embedding":[]}]}`, 200, "has 0 values"},
		{"too long a vector", `{"data":[{"index":0,"embedding":` + vec(config.MaxEmbeddingDimensions+1, "1") + `}]}`, 200, "has 8193 values; want 1 to 8192"},
		{"huge", `{"data":[{"index":0,"embedding":` + vec(config.MaxEmbeddingDimensions, strings.Repeat("1", 40)) + `}]}`, 200, "is over 262144 bytes for 1 texts"},
		{"error status", `{"error":"rate limited, key sk-secretkey1234567890 blocked"}`, 429, "answered 429"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.SetReply(func(w http.ResponseWriter, _ []string) bool {
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
				return true
			})
			cl := embedding.NewClient(embedding.ClientConfig{BaseURL: f.BaseURL(), Model: "fake", Key: "sk-secretkey1234567890"})
			got, err := cl.Embed(context.Background(), []string{"x"})
			if err == nil || !strings.Contains(err.Error(), c.want) || got != nil {
				t.Fatalf("got %d vectors, error %v; want one saying %q", len(got), err, c.want)
			}
			if strings.Contains(err.Error(), "secretkey") {
				t.Errorf("the error shows the key: %v", err)
			}
			if c.status == 200 && !errors.Is(err, embedding.ErrReply) {
				t.Errorf("%v does not wrap ErrReply", err)
			}
		})
	}
}

// A vector of another length than the first reply's, or than the
// dimensions asked for, is refused.
func TestClientHoldsDimensions(t *testing.T) {
	f := embeddingtest.New(t)
	cl := embedding.NewClient(embedding.ClientConfig{BaseURL: f.BaseURL(), Model: "fake"})
	if _, err := cl.Embed(context.Background(), []string{"a b"}); err != nil {
		t.Fatal(err)
	}
	f.SetReply(func(w http.ResponseWriter, _ []string) bool {
		fmt.Fprint(w, `{"data":[{"index":0,"embedding":[1,2,3]}]}`)
		return true
	})
	if _, err := cl.Embed(context.Background(), []string{"c"}); err == nil || !strings.Contains(err.Error(), "vector 0 has 3 values; want 64") {
		t.Errorf("a shorter vector after the first reply: %v", err)
	}
	asked := embedding.NewClient(embedding.ClientConfig{BaseURL: f.BaseURL(), Model: "fake", Dimensions: 4})
	if _, err := asked.Embed(context.Background(), []string{"c"}); err == nil || !strings.Contains(err.Error(), "want 4") {
		t.Errorf("a vector of another length than asked: %v", err)
	}
}

// Long texts are cut at a character boundary before they are sent.
func TestClientCutsLongInput(t *testing.T) {
	f := embeddingtest.New(t)
	var got []string
	f.SetReply(func(w http.ResponseWriter, in []string) bool {
		got = in
		return false
	})
	cl := embedding.NewClient(embedding.ClientConfig{BaseURL: f.BaseURL(), Model: "fake"})
	long := strings.Repeat("é", embedding.MaxInputBytes) // 2 bytes each
	if _, err := cl.Embed(context.Background(), []string{long}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) != embedding.MaxInputBytes || got[0] != long[:embedding.MaxInputBytes] {
		t.Fatalf("sent %d bytes", len(got[0]))
	}
	if _, err := cl.Embed(context.Background(), []string{"x" + long}); err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != embedding.MaxInputBytes-1 || !strings.HasPrefix(long, got[0][1:]) {
		t.Fatalf("cut inside a character: %d bytes", len(got[0]))
	}
}

// The key follows llm's rules: a workspace names only LOOM_* variables,
// and a key goes only where the operator allows.
func TestNewKeyRules(t *testing.T) {
	f := embeddingtest.New(t)
	env := map[string]string{"LOOM_EMBED_KEY": "k-123456", "HOME_SECRET": "s-123456"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg := config.EmbeddingsConfig{BaseURL: f.BaseURL(), Model: "fake", APIKeyEnv: "HOME_SECRET"}
	if _, err := embedding.New(cfg, lookup); !errors.Is(err, llm.ErrSecretRefused) || !strings.Contains(err.Error(), "memory.embeddings.api_key_env names HOME_SECRET") {
		t.Errorf("a non-LOOM variable: %v", err)
	}
	cfg.APIKeyEnv = "LOOM_EMBED_KEY"
	if _, err := embedding.New(cfg, lookup); !errors.Is(err, llm.ErrSecretRefused) || !strings.Contains(err.Error(), llm.EnvAllowedEndpoints) {
		t.Errorf("a key to the workspace's own host: %v", err)
	}
	if f.Calls() != 0 {
		t.Fatalf("%d calls before the key was allowed", f.Calls())
	}
	env[llm.EnvAllowedEndpoints] = "127.0.0.1"
	e, err := embedding.New(cfg, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.QueryVector(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	if a := f.Auth(); len(a) != 1 || a[0] != "Bearer k-123456" {
		t.Errorf("Authorization %q", a)
	}
	// No key: nothing to refuse, and nothing sent.
	cfg.APIKeyEnv = ""
	delete(env, llm.EnvAllowedEndpoints)
	e, err = embedding.New(cfg, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.QueryVector(context.Background(), "hello again"); err != nil {
		t.Fatal(err)
	}
	if a := f.Auth(); a[len(a)-1] != "" {
		t.Errorf("Authorization %q with no key", a[len(a)-1])
	}
}
