package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

func TestFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"-w", ".", "--root", "."}, "cannot be used together"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--store", "mysql"}, "must be sqlite or postgres"},
		{[]string{"--dsn-env", "LOOM_X"}, "--dsn-env needs --store postgres"},
		{[]string{"--store", "postgres", "--dsn-env", "1BAD"}, "not a variable name"},
	} {
		cmd := NewCmdServe(ios, func(*Options) error { return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: %v", tc.args, err)
		}
	}
}

func TestRefusesOpenAddrWithoutTokens(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	err := Run(context.Background(), &Options{IO: ios, Dir: t.TempDir(), Addr: "0.0.0.0:0", LogFormat: "text", LogLevel: "info"})
	if err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("got %v", err)
	}
	t.Setenv("LOOM_TEST_EMPTY", "")
	err = Run(context.Background(), &Options{IO: ios, Dir: t.TempDir(), Addr: "0.0.0.0:0", TokenEnv: "LOOM_TEST_EMPTY", LogFormat: "text", LogLevel: "info"})
	if err == nil || !strings.Contains(err.Error(), "empty or unset") {
		t.Fatalf("empty token variable: %v", err)
	}
}

// --store postgres with its variable empty stops before serving, naming
// the variable; the DSN is never printed (there is none to print here).
func TestStorePostgresNeedsDSN(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	t.Setenv("LOOM_TEST_DSN", "")
	err := Run(context.Background(), &Options{IO: ios, Dir: t.TempDir(), Addr: "127.0.0.1:0", Store: "postgres", DSNEnv: "LOOM_TEST_DSN", LogFormat: "text", LogLevel: "info"})
	if err == nil || !strings.Contains(err.Error(), "LOOM_TEST_DSN is empty or unset") {
		t.Fatalf("got %v", err)
	}
}

func TestRunServesAndStops(t *testing.T) {
	ios, _, _, errOut := cmdutil.Test()
	t.Setenv("LOOM_TEST_TOKENS", "a-token, b-token")
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, &Options{IO: ios, Dir: t.TempDir(), Addr: "127.0.0.1:0", TokenEnv: "LOOM_TEST_TOKENS",
			LogFormat: "json", LogLevel: "info", Started: func(a net.Addr) { addr <- a }})
	}()
	var a net.Addr
	select {
	case a = <-addr:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("never started")
	}
	req, _ := http.NewRequest("GET", "http://"+a.String()+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer b-token")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("readyz: %d", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), `"msg":"request"`) || strings.Contains(errOut.String(), "b-token") {
		t.Fatalf("log:\n%s", errOut)
	}
}
