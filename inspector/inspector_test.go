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
	s, err := server.New(server.Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := Mount(s); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
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
