package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/gateway"
	"github.com/loomctx/loom/server"
)

// benchBody is the request both benchmarks send (bench/gateway's).
var benchBody = []byte(`{"model":"m","stream":true,"temperature":0.2,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"What changed today?"}]}`)

// benchUpstream is a fake upstream that answers at once with a short
// stream; size holds the length of the last request body it read.
func benchUpstream(b *testing.B, size *atomic.Int64) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		size.Store(n)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range streamChunks("a", "b", "c") {
			io.WriteString(w, c)
		}
	}))
	b.Cleanup(up.Close)
	return up
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the process's CPU time per operation to b's results:
// on a machine other work loads, a steadier measure than the time taken.
func reportCPU(b *testing.B, f func()) {
	start := cpuTime()
	f()
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// benchGateway starts loom (with the gateway) over the large workspace
// and a fake upstream; post sends one request and checks its status.
func benchGateway(b *testing.B) (ts, up *httptest.Server, size *atomic.Int64, post func(url string, body []byte, session bool, headers ...string)) {
	size = new(atomic.Int64)
	up = benchUpstream(b, size)
	for _, k := range []string{"LOOM_LLM_BASE_URL", "LOOM_LLM_API_KEY", "LOOM_LLM_MODEL", "LOOM_LLM_PROVIDER", "LOOM_MEMORY_DB", "LOOM_TEST_UPSTREAM_KEY"} {
		b.Setenv(k, "")
	}
	dir := writeWorkspace(b, up.URL, "")
	gen := filepath.Join("..", "..", "shared", "bench", "make-workspace")
	if _, err := os.Stat(gen); err == nil {
		if out, err := exec.Command("python3", gen, "--force", "large", dir).CombinedOutput(); err != nil {
			b.Fatalf("make-workspace: %v\n%s", err, out)
		}
	} else {
		fmt.Fprintf(os.Stderr, "%s: the shared benchmark generator is not beside this checkout: measuring the small test workspace, not the large one\n", b.Name()) // b.Log is not shown for a benchmark that passes
	}
	yaml := fmt.Sprintf("llm:\n  provider: openai\n  base_url: %s/v1\n  model: fake-model\n  extraction:\n    enabled: false\n  consolidation:\n    enabled: false\n", up.URL)
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := server.New(server.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	gateway.Mount(s, gateway.Options{})
	ts = httptest.NewServer(s.Handler())
	b.Cleanup(ts.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	b.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	post = func(url string, body []byte, session bool, headers ...string) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		if session {
			req.Header.Set("X-Loom-Session", "bench")
		}
		res, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("%s: %d", url, res.StatusCode)
		}
	}
	return ts, up, size, post
}

// BenchmarkGateway is one streamed request on the shared generator's large
// workspace (when it is there) to a fake upstream that answers at once,
// memory calls off, as in bench/gateway:
//
//	loom         through loom's HTTP server and the gateway (session saved,
//	             as a client with X-Loom-Session)
//	direct       the client's request straight to the upstream
//	direct-size  a request as large as the one loom sends, straight to the
//	             upstream: what the prompt's bytes cost by themselves
//
// loom minus direct is what loom adds; -32 runs 32 clients at once.
func BenchmarkGateway(b *testing.B) {
	ts, up, size, post := benchGateway(b)
	viaLoom := func() { post(ts.URL+"/v1/chat/completions", benchBody, true) }
	direct := func(body []byte) { post(up.URL+"/v1/chat/completions", body, false) }
	viaLoom()
	big := bytes.Repeat([]byte(" "), int(size.Load()))
	b.Run("loom", func(b *testing.B) {
		b.ReportAllocs()
		reportCPU(b, func() {
			for b.Loop() {
				viaLoom()
			}
		})
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		reportCPU(b, func() {
			for b.Loop() {
				direct(benchBody)
			}
		})
	})
	// 32 clients at once, as bench/gateway's loaded phase.
	b.Run("loom-32", func(b *testing.B) {
		b.SetParallelism(16)
		reportCPU(b, func() {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					viaLoom()
				}
			})
		})
	})
	b.Run("direct-32", func(b *testing.B) {
		b.SetParallelism(16)
		reportCPU(b, func() {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					direct(benchBody)
				}
			})
		})
	})
	b.Run("direct-size-32", func(b *testing.B) {
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				direct(big)
			}
		})
	})
	b.Run("direct-size", func(b *testing.B) {
		b.ReportMetric(float64(len(big)), "body-bytes")
		for b.Loop() {
			direct(big)
		}
	})
}

// BenchmarkProtocols is the same streamed turn through loom as a Chat
// Completions, a Responses and a Messages request (bench/gateway's
// -protocols bodies), to the same OpenAI-compatible fake upstream, each on
// a session of its own: what each wire costs beside Chat Completions.
func BenchmarkProtocols(b *testing.B) {
	ts, _, _, post := benchGateway(b)
	for _, p := range []struct {
		name, path string
		body       []byte
		headers    []string
	}{
		{"chat", "/v1/chat/completions", benchBody, nil},
		{"responses", "/v1/responses", []byte(`{"model":"m","stream":true,"temperature":0.2,"instructions":"You are terse.","input":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"What changed today?"}]}`), nil},
		{"messages", "/v1/messages", []byte(`{"model":"m","max_tokens":1024,"stream":true,"temperature":0.2,"system":"You are terse.","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"What changed today?"}]}`), []string{"Anthropic-Version", "2023-06-01"}},
	} {
		headers := append([]string{"X-Loom-Session", "bench-" + p.name}, p.headers...)
		post(ts.URL+p.path, p.body, false, headers...)
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			reportCPU(b, func() {
				for b.Loop() {
					post(ts.URL+p.path, p.body, false, headers...)
				}
			})
		})
	}
}
