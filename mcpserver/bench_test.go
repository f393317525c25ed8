package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/mcpserver"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/workspace"
)

var (
	benchOnce sync.Once
	benchDir  string
	benchBin  string
	benchErr  string
)

// benchSetup copies the shared generator's large workspace (250 skills)
// into a temporary folder, imports its 2,000 memories into the memory
// store, and builds loom, once per process.
func benchSetup(b *testing.B) (dir, bin string) {
	b.Helper()
	benchOnce.Do(func() {
		gen, _ := filepath.Abs("../../shared/bench/make-workspace")
		if _, err := os.Stat(gen); err != nil {
			benchErr = "the shared benchmark generator is not beside this checkout"
			return
		}
		tmp, err := os.MkdirTemp("", "loom-mcp-bench-")
		if err != nil {
			benchErr = err.Error()
			return
		}
		benchDir = filepath.Join(tmp, "ws")
		if out, err := exec.Command("python3", gen, "large", benchDir).CombinedOutput(); err != nil {
			benchErr = "make-workspace: " + err.Error() + "\n" + string(out)
			return
		}
		if err := importMemories(benchDir); err != nil {
			benchErr = err.Error()
			return
		}
		benchBin = filepath.Join(tmp, "loom")
		if out, err := exec.Command("go", "build", "-o", benchBin, "github.com/loomctx/loom/cmd/loom").CombinedOutput(); err != nil {
			benchErr = "go build: " + err.Error() + "\n" + string(out)
		}
	})
	if benchErr != "" {
		b.Skip(benchErr)
	}
	return benchDir, benchBin
}

func importMemories(dir string) error {
	f, err := os.Open(filepath.Join(dir, "memories.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	var ms []memory.Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m memory.Memory
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return err
		}
		ms = append(ms, m)
	}
	path, err := config.MemoryStoreLocation(dir, nil)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	st, err := memory.OpenSQLite(path)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Import(context.Background(), ms)
}

// benchCalls are the calls measured, each on a warm server.
var benchCalls = []struct {
	name string
	call func(ctx context.Context, cs *mcp.ClientSession) error
}{
	{"ping", func(ctx context.Context, cs *mcp.ClientSession) error { return cs.Ping(ctx, nil) }},
	{"prompts_list", func(ctx context.Context, cs *mcp.ClientSession) error {
		r, err := cs.ListPrompts(ctx, nil)
		if err == nil && len(r.Prompts) < 250 {
			return errShort
		}
		return err
	}},
	{"prompts_get", func(ctx context.Context, cs *mcp.ClientSession) error {
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "account-pattern", Arguments: map[string]string{"message": "go"}})
		return err
	}},
	{"read_prompt", func(ctx context.Context, cs *mcp.ClientSession) error {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.PromptURI})
		return err
	}},
	{"recall", func(ctx context.Context, cs *mcp.ClientSession) error {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "recall", Arguments: map[string]any{"text": "service"}})
		if err == nil && r.IsError {
			return errShort
		}
		return err
	}},
}

type benchError string

func (e benchError) Error() string { return string(e) }

const errShort = benchError("unexpected answer")

// handlerTimes records how long the server spent handling each request,
// from the SDK's dispatch to the handler's return: loom's own time, without
// the transport or JSON encoding.
type handlerTimes struct {
	mu sync.Mutex
	ds []time.Duration
}

func (h *handlerTimes) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		res, err := next(ctx, method, req)
		if method != "notifications/initialized" {
			h.mu.Lock()
			h.ds = append(h.ds, time.Since(start))
			h.mu.Unlock()
		}
		return res, err
	}
}

func (h *handlerTimes) reset() {
	h.mu.Lock()
	h.ds = h.ds[:0]
	h.mu.Unlock()
}

func percentiles(ds []time.Duration) (p50, p99 float64) {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1e3, float64(ds[len(ds)*99/100].Nanoseconds()) / 1e3
}

// measure runs call b.N times after a warm-up and reports the median and
// 99th percentile latency, and with h, those of the server's handler.
func measure(b *testing.B, cs *mcp.ClientSession, h *handlerTimes, call func(context.Context, *mcp.ClientSession) error) {
	ctx := context.Background()
	for range 20 {
		if err := call(ctx, cs); err != nil {
			b.Fatal(err)
		}
	}
	ds := make([]time.Duration, 0, b.N)
	if h != nil {
		h.reset()
	}
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := call(ctx, cs); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	p50, p99 := percentiles(ds)
	b.ReportMetric(p50, "p50-µs")
	b.ReportMetric(p99, "p99-µs")
	if h != nil {
		h.mu.Lock()
		p50, p99 = percentiles(h.ds)
		h.mu.Unlock()
		b.ReportMetric(p50, "loom-p50-µs")
		b.ReportMetric(p99, "loom-p99-µs")
	}
}

// BenchmarkStdio measures calls from the Go SDK's client to `loom mcp` over
// stdio on the large workspace: ping is the transport's round trip, and each
// other call's excess over it is loom's own time.
func BenchmarkStdio(b *testing.B) {
	dir, bin := benchSetup(b)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "mcp", "-w", dir)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for _, c := range benchCalls {
		b.Run(c.name, func(b *testing.B) { measure(b, cs, nil, c.call) })
	}
}

// BenchmarkInMemory is BenchmarkStdio over the SDK's in-memory transport,
// in process.
func BenchmarkInMemory(b *testing.B) {
	dir, _ := benchSetup(b)
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	s, err := mcpserver.New(ws, mcpserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := &handlerTimes{}
	s.MCP().AddReceivingMiddleware(h.middleware)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for _, c := range benchCalls {
		b.Run(c.name, func(b *testing.B) { measure(b, cs, h, c.call) })
	}
}
