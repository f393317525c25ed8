package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/server"
)

// benchWorkspace is the shared generator's large workspace when
// ../../shared/bench/make-workspace is there, else the small test one.
func benchWorkspace(b *testing.B) string {
	dir := b.TempDir()
	gen := filepath.Join("..", "..", "shared", "bench", "make-workspace")
	if _, err := os.Stat(gen); err == nil {
		if out, err := exec.Command("python3", gen, "large", dir).CombinedOutput(); err != nil {
			b.Fatalf("make-workspace: %v\n%s", err, out)
		}
		return dir
	}
	fmt.Fprintf(os.Stderr, "%s: the shared benchmark generator is not beside this checkout: measuring the small test workspace, not the large one\n", b.Name()) // b.Log is not shown for a benchmark that passes
	return writeWorkspace(b, dir)
}

func benchRoute(b *testing.B, path string, body []byte, header ...string) {
	s, err := server.New(server.Options{Dir: benchWorkspace(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	do := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "http://127.0.0.1"+path, bytes.NewReader(body)) // a loopback Host, or the guard answers 421
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := do(); rec.Code >= 400 {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		do()
	}
	// CPU time per request: on a machine other work loads, steadier
	// than the time taken.
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkRender(b *testing.B) {
	benchRoute(b, "/v1/workspaces/default/render", []byte(`{"channel":"slack","user":"u1"}`))
}

func BenchmarkMessages200(b *testing.B) {
	var h []map[string]string
	for i := 0; i < 200; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		h = append(h, map[string]string{"role": role, "content": fmt.Sprintf("Message %d of the conversation, with a little text to carry.", i)})
	}
	body, _ := json.Marshal(map[string]any{"message": "And now?", "history": h, "channel": "slack", "user": "u1", "now": "2026-01-02T03:04:05Z"})
	benchRoute(b, "/v1/workspaces/default/messages", body)
}

// BenchmarkRenderFloor is the floor for BenchmarkRender: a bare handler
// writing the same response bytes, through the same recorder.
func BenchmarkRenderFloor(b *testing.B) {
	s, err := server.New(server.Options{Dir: benchWorkspace(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	req := httptest.NewRequest("POST", "http://127.0.0.1/v1/workspaces/default/render", bytes.NewReader([]byte(`{"channel":"slack","user":"u1"}`)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	h := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/workspaces/default/render", bytes.NewReader([]byte(`{"channel":"slack","user":"u1"}`)))
		h(httptest.NewRecorder(), req)
	}
}
