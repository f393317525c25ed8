package server_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/loomctx/loom/embedding/embeddingtest"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/server"
)

// With memory.embeddings set, /metrics reports the embedding worker: the
// memories it embedded, and, while the endpoint is down, its failures and
// that it is failing. Without the setting there is no such series.
func TestEmbeddingMetrics(t *testing.T) {
	metric := func(t *testing.T, c *client, name string) (float64, bool) {
		t.Helper()
		res, err := http.Get(c.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		m := regexp.MustCompile(`(?m)^` + name + `\{workspace="default"\} (\S+)$`).FindStringSubmatch(b.String())
		if m == nil {
			return 0, false
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v, true
	}
	waitFor := func(t *testing.T, what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 20s for %s", what)
			}
		}
	}
	workspace := func(t *testing.T, yaml string) string {
		dir := writeWorkspace(t, t.TempDir())
		if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		store, err := memory.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		for _, content := range []string{"Ann drives a red automobile.", "Ann takes green tea in the morning.", "The office shuts on Sundays."} {
			if _, err := store.Add(context.Background(), memory.NewMemory{Category: "personal_fact", User: "ann", Content: content}); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	turn := func(t *testing.T, c *client) {
		t.Helper()
		if r := c.do("POST", "/v1/workspaces/default/messages", map[string]any{"message": "Which car does Ann drive?", "user": "ann"}); r.Status != 200 {
			t.Fatalf("messages: %d %s", r.Status, r.Body)
		}
	}

	t.Run("off", func(t *testing.T) {
		_, c := newServer(t, server.Options{Dir: workspace(t, "memory:\n  budget: 300\n")})
		turn(t, c)
		if v, ok := metric(t, c, "loom_embedding_embedded_total"); ok {
			t.Errorf("embeddings off, yet loom_embedding_embedded_total = %v", v)
		}
	})

	t.Run("on", func(t *testing.T) {
		f := embeddingtest.New(t)
		_, c := newServer(t, server.Options{Dir: workspace(t, "memory:\n  budget: 300\n  embeddings:\n    base_url: "+f.BaseURL()+"\n    model: fake\n")})
		turn(t, c) // the first recall that needs vectors starts the worker
		waitFor(t, "3 memories embedded", func() bool { v, _ := metric(t, c, "loom_embedding_embedded_total"); return v == 3 })
		if v, _ := metric(t, c, "loom_embedding_failing"); v != 0 {
			t.Errorf("loom_embedding_failing = %v with the endpoint up", v)
		}
		f.SetDown(true)
		if r := c.do("POST", "/v1/workspaces/default/memories", map[string]any{"category": "personal_fact", "user": "ann", "content": "Ann plays chess on Fridays."}); r.Status/100 != 2 {
			t.Fatalf("remember: %d %s", r.Status, r.Body)
		}
		waitFor(t, "a failure", func() bool { v, _ := metric(t, c, "loom_embedding_failures_total"); return v >= 1 })
		if v, _ := metric(t, c, "loom_embedding_failing"); v != 1 {
			t.Errorf("loom_embedding_failing = %v with the endpoint down", v)
		}
		f.SetDown(false)
		waitFor(t, "the fourth memory embedded", func() bool { v, _ := metric(t, c, "loom_embedding_embedded_total"); return v == 4 })
		if v, _ := metric(t, c, "loom_embedding_failing"); v != 0 {
			t.Errorf("loom_embedding_failing = %v after the endpoint came back", v)
		}
	})
}
