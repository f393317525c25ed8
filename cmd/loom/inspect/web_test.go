package inspect

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

// loom inspect --web answers only loopback Host names and those given
// with --allowed-hosts, as loom serve does: the same guard.
func TestWebHostCheck(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("# Agent\n\nWEB-MARKER-3.\n"), 0o644)
	t.Setenv("LOOM_MEMORY_DB", "")
	pr, pw := io.Pipe()
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: pw, ErrOut: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cmd := NewCmdInspect(ios, nil)
	cmd.SetArgs([]string{"--web", "-w", ws, "--allowed-hosts", "inspect.internal"})
	cmd.SetContext(ctx)
	go func() { done <- cmd.Execute(); pw.Close() }()
	t.Cleanup(func() { cancel(); <-done })
	line := make([]byte, 256)
	n, err := pr.Read(line)
	if err != nil {
		t.Fatal(err)
	}
	page := strings.TrimSpace(string(line[:n]))
	go io.Copy(io.Discard, pr)
	get := func(host string) (int, string) {
		req, _ := http.NewRequest("GET", page, nil)
		req.Host = host
		c := &http.Client{Timeout: 30 * time.Second}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if st, body := get("evil.example"); st != http.StatusMisdirectedRequest || strings.Contains(body, "WEB-MARKER-3") {
		t.Errorf("Host evil.example: %d %.200s", st, body)
	}
	for _, host := range []string{"inspect.internal", strings.SplitN(page, "/", 4)[2]} { // a name given, and the address it printed
		if st, body := get(host); st != 200 || !strings.Contains(body, "loom-form-token") {
			t.Errorf("Host %s: %d %.200s", host, st, body)
		}
	}
}
