package inspector

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/server"
)

func TestMarkdownEscapes(t *testing.T) {
	got := string(markdownHTML("# Title <b>\n\nText with **bold <i>** and `<code>` and <script>alert(1)</script>\n\n- item <x>\n1. first\n\n```\n<raw>\n```\n"))
	for _, bad := range []string{"<b>", "<i>", "<script>", "<x>", "<raw>", "<code><code>"} {
		if strings.Contains(got, bad) {
			t.Errorf("markdown output holds %q unescaped:\n%s", bad, got)
		}
	}
	for _, want := range []string{"<h3>Title &lt;b&gt;</h3>", "<strong>bold &lt;i&gt;</strong>", "<code>&lt;code&gt;</code>", "<li>item &lt;x&gt;</li>", "<ol>", "<pre><code>&lt;raw&gt;\n</code></pre>"} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown output lacks %q:\n%s", want, got)
		}
	}
}

func TestLineDiff(t *testing.T) {
	var clipped bool
	rows := lineDiff("a\nb\nc\nd\n", "a\nB\nc\nd\ne\n", &clipped)
	var kinds []string
	for _, r := range rows {
		kinds = append(kinds, r.Kind+":"+r.Left+">"+r.Right)
	}
	want := "same:a>a change:b>B same:c>c same:d>d add:>e"
	if strings.Join(kinds, " ") != want {
		t.Errorf("lineDiff = %s\nwant %s", strings.Join(kinds, " "), want)
	}
}

func TestControls(t *testing.T) {
	for _, q := range []string{"budget=-1", "budget=lots", "encoding=o200k_base&model=gpt-4o"} {
		v, _ := urlValues(q)
		if _, err := controls(v); err == nil {
			t.Errorf("controls(%s): no error", q)
		}
	}
}

// TestMountServes mounts the inspector on a real server: the page, a view
// with a budget, a bad parameter, and the assets.
func TestMountServes(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("# Agents\n\nHello <script>x</script>\n"), 0o644)
	ts := serveInspector(t, server.Options{Dir: root})
	get := func(path string) (int, string) {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/inspect/default/")
	if code != 200 || !strings.Contains(body, `data-name="bootstrap"`) || strings.Contains(body, "<script>x</script>") {
		t.Errorf("GET /inspect/default/: %d, page escapes and sections wrong:\n%.500s", code, body)
	}
	if code, body = get("/inspect/default/view?budget=20"); code != 200 || !strings.Contains(body, `data-status="dropped"`) {
		t.Errorf("view at budget 20: %d, no dropped entry", code)
	}
	if code, _ = get("/inspect/default/view?budget=x"); code != 400 {
		t.Errorf("view with budget=x: %d, want 400", code)
	}
	if code, _ = get("/inspect/nope/"); code != 404 {
		t.Errorf("unknown workspace: %d, want 404", code)
	}
	if resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(ts.URL + "/ui/default"); err != nil || resp.Header.Get("Location") != "/inspect/default/" {
		t.Errorf("/ui/default does not lead to /inspect/default/: %v", err)
	}
	if code, _ = get("/inspect-assets/app.js"); code != 200 {
		t.Errorf("app.js: %d", code)
	}
}

func urlValues(q string) (map[string][]string, error) {
	v, err := url.ParseQuery(q)
	return v, err
}

// loom serve --root: / lists the workspaces, each link a working page, and
// keeps the query (the controls); a server of one workspace redirects /
// to its page, keeping the query too (loom inspect --web prints
// /?budget=N).
func TestIndex(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"alpha", "beta"} {
		os.MkdirAll(filepath.Join(root, n), 0o755)
		os.WriteFile(filepath.Join(root, n, "AGENTS.md"), []byte("# "+n+"\n"), 0o644)
	}
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("not a workspace"), 0o644)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(ts *httptest.Server, path string) (*http.Response, string) {
		resp, err := noFollow.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	ts := serveInspector(t, server.Options{Root: root})
	for _, path := range []string{"/", "/inspect/"} {
		resp, body := get(ts, path+"?budget=50")
		if resp.StatusCode != 200 || !strings.Contains(body, `<form class="workspaces" action="/" method="get">`) ||
			!strings.Contains(body, `<input type="hidden" name="budget" value="50">`) ||
			!strings.Contains(body, `<button name="ws" value="alpha">alpha</button>`) || !strings.Contains(body, `<button name="ws" value="beta">beta</button>`) ||
			strings.Contains(body, "notes.txt") {
			t.Errorf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
	}
	// Each button leads to its workspace's page, with the query kept.
	for _, n := range []string{"alpha", "beta"} {
		resp, _ := get(ts, "/?budget=50&ws="+n)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "/inspect/"+n+"/?budget=50" {
			t.Errorf("ws=%s: %d to %q", n, resp.StatusCode, loc)
			continue
		}
		if resp, body := get(ts, "/inspect/"+n+"/?budget=50"); resp.StatusCode != 200 || !strings.Contains(body, `value="50"`) {
			t.Errorf("the %s page: %d", n, resp.StatusCode)
		}
	}
	if resp, _ := get(ts, "/?ws=nope"); resp.StatusCode != 404 {
		t.Errorf("ws=nope: %d, want 404", resp.StatusCode)
	}
	if resp, body := get(serveInspector(t, server.Options{Root: t.TempDir()}), "/"); resp.StatusCode != 200 || !strings.Contains(body, "no workspace yet") {
		t.Errorf("empty root: %d\n%s", resp.StatusCode, body)
	}

	one := serveInspector(t, server.Options{Dir: filepath.Join(root, "alpha")})
	if resp, _ := get(one, "/?budget=50"); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/inspect/default/?budget=50" {
		t.Errorf("one workspace: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// serveInspector starts a server for opts with the inspector mounted,
// closed when the test ends.
func serveInspector(t *testing.T, opts server.Options) *httptest.Server {
	t.Helper()
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := Mount(s); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}
