package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/gateway"
	"github.com/loomctx/loom/server"
)

// BenchmarkGateway is one streamed request through the gateway, on the
// shared generator's large workspace when it is there, to a fake upstream
// that answers at once.
func BenchmarkGateway(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range streamChunks("a", "b", "c") {
			io.WriteString(w, c)
		}
	}))
	defer up.Close()
	b.Setenv("LOOM_TEST_UPSTREAM_KEY", "")
	for _, k := range []string{"LOOM_LLM_BASE_URL", "LOOM_LLM_API_KEY", "LOOM_LLM_MODEL", "LOOM_LLM_PROVIDER", "LOOM_MEMORY_DB"} {
		b.Setenv(k, "")
	}
	dir := writeWorkspace(b, up.URL, "")
	gen := filepath.Join("..", "..", "shared", "bench", "make-workspace")
	if _, err := os.Stat(gen); err == nil {
		exec.Command("python3", gen, "--force", "large", dir).Run()
	}
	s, err := server.New(server.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	gateway.Mount(s, gateway.Options{})
	h := s.Handler()
	body := []byte(`{"model":"m","stream":true,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"What changed today?"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Loom-Session", "bench")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
