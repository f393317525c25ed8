package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/loomctx/loom/server"
)

// TestMetricsSeriesAreBounded: each request is counted under its route
// pattern, status and method, and a method a client makes up is counted as
// "other", so that no client can add series to /metrics at will.
func TestMetricsSeriesAreBounded(t *testing.T) {
	_, c := newServer(t, server.Options{})
	for _, m := range []string{"FROB1", "FROB2", "GET", "GET"} {
		req, _ := http.NewRequest(m, c.base+"/healthz", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	res, err := http.Get(c.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	text := string(body)
	for _, want := range []string{
		`loom_http_requests_total{code="200",method="GET",route="GET /healthz"} 2`,
		`method="other"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s in:\n%s", want, grep(text, "loom_http_requests_total"))
		}
	}
	if strings.Contains(text, "FROB") {
		t.Errorf("a made-up method became a series:\n%s", text)
	}
}

func grep(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
