package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
)

// The README's first HTTP example works on a fresh machine, line by line
// as printed: loom init, loom serve in the background (on a free port
// here), then each curl, whose body and path are sent as they are.
func TestREADMEServeExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "\n## HTTP server and gateway\n")
	if i < 0 {
		t.Fatal("README has no HTTP server section")
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(text[i:])
	if block == nil {
		t.Fatal("the HTTP section has no sh block")
	}
	t.Chdir(t.TempDir())
	t.Setenv("LOOM_CACHE_DIR", t.TempDir())
	t.Setenv("LOOM_MEMORY_DB", "")
	curl := regexp.MustCompile(`^curl -s localhost:7411(/\S+) -H 'Content-Type: application/json' -d '(.*)'$`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var base string
	done := make(chan error, 1)
	var curls int
	for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "loom ") && strings.HasSuffix(line, "&"):
			args := append(strings.Fields(strings.TrimSuffix(line, "&"))[1:], "--addr", "127.0.0.1:0")
			errOut := &lockedBuffer{}
			go func() {
				root := newRootCmd(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &lockedBuffer{}, ErrOut: errOut}, args)
				root.SetArgs(args)
				done <- root.ExecuteContext(ctx)
			}()
			serving := regexp.MustCompile(`serving on (http://127\.0\.0\.1:\d+)`)
			deadline := time.After(60 * time.Second)
			for base == "" {
				select {
				case err := <-done:
					t.Fatalf("%s: ended before serving: %v\n%s", line, err, errOut)
				case <-deadline:
					t.Fatalf("%s: not serving after 60s: %s", line, errOut)
				case <-time.After(20 * time.Millisecond):
					if m := serving.FindStringSubmatch(errOut.String()); m != nil {
						base = m[1]
					}
				}
			}
		case strings.HasPrefix(line, "loom "):
			ios, _, _, errOut := cmdutil.Test()
			if code := runWith(ios, strings.Fields(line)[1:]); code != 0 {
				t.Fatalf("%s: exit %d: %s", line, code, errOut)
			}
		case curl.MatchString(line):
			if base == "" {
				t.Fatalf("%s: no server started before it", line)
			}
			m := curl.FindStringSubmatch(line)
			resp, err := http.Post(base+m[1], "application/json", strings.NewReader(m[2]))
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("%s: %d %v %v", line, resp.StatusCode, err, body)
			}
			if body["prompt"] == nil && body["messages"] == nil {
				t.Errorf("%s: neither a prompt nor messages in %v", line, body)
			}
			curls++
		default:
			t.Fatalf("a README line this test does not know how to run: %q", line)
		}
	}
	if curls == 0 {
		t.Fatal("no request in the README's example")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
