package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/loomctx/loom/server"
)

// writeWorkspace makes a small workspace in a new folder: bootstrap files
// with marker text and one skill.
func writeWorkspace(t testing.TB, dir string) string {
	t.Helper()
	files := map[string]string{
		"AGENTS.md":              "# Agent\n\nMARKER-AGENTS-7f3: answer briefly.\n",
		"SOUL.md":                "# Soul\n\nCurious and kind.\n",
		"skills/greet/SKILL.md":  "---\nname: greet\ndescription: Greet the user by name.\n---\n\nSay hello to the user, using their name.\n",
		"skills/broken/SKILL.md": "---\nname: [unclosed\n---\nbody\n",
		"memory/MEMORY.md":       "The user's cat is called Miso.\n",
	}
	for rel, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newServer serves a fresh workspace (or the options given) with httptest.
func newServer(t testing.TB, opts server.Options) (*server.Server, *client) {
	t.Helper()
	if opts.Dir == "" && opts.Root == "" {
		opts.Dir = writeWorkspace(t, t.TempDir())
	}
	t.Setenv("LOOM_MEMORY_DB", "")
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, &client{t: t, base: ts.URL}
}

// client sends requests and checks every response against the OpenAPI
// document: the status must be documented for the route and the body must
// match the schema documented for it.
type client struct {
	t     testing.TB
	base  string
	token string
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

func (r *response) problem(t testing.TB) server.Problem {
	t.Helper()
	var p server.Problem
	r.decode(t, &p)
	return p
}

func (c *client) do(method, path string, body any, headers ...string) *response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	out := &response{Status: res.StatusCode, Header: res.Header, Body: data}
	validateResponse(c.t, method, req.URL.EscapedPath(), out)
	return out
}

var (
	specOnce  sync.Once
	spec      map[string]any
	specPaths []specPath
	compiler  *jsonschema.Compiler
	schemas   sync.Map // pointer → *jsonschema.Schema
)

type specPath struct {
	template string
	re       *regexp.Regexp
}

func loadSpec(t testing.TB) {
	specOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(server.OpenAPI()))
		if err != nil {
			t.Fatalf("openapi.json: %v", err)
		}
		spec = doc.(map[string]any)
		compiler = jsonschema.NewCompiler()
		compiler.DefaultDraft(jsonschema.Draft2020)
		if err := compiler.AddResource("mem://loom/openapi.json", doc); err != nil {
			t.Fatalf("openapi.json: %v", err)
		}
		for tmpl := range spec["paths"].(map[string]any) {
			re := "^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$"
			specPaths = append(specPaths, specPath{tmpl, regexp.MustCompile(re)})
		}
	})
	if spec == nil {
		t.Fatal("openapi.json did not load")
	}
}

// findTemplate picks the documented path for a concrete path, preferring a
// literal segment over a wildcard (as ServeMux does).
func findTemplate(path string) string {
	best, bestWild := "", 1<<30
	for _, p := range specPaths {
		if p.re.MatchString(path) {
			if w := strings.Count(p.template, "{"); w < bestWild {
				best, bestWild = p.template, w
			}
		}
	}
	return best
}

func pointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1", "{", "%7B", "}", "%7D").Replace(s)
}

func validateResponse(t testing.TB, method, path string, res *response) {
	t.Helper()
	loadSpec(t)
	tmpl := findTemplate(path)
	if tmpl == "" {
		if res.Status == http.StatusNotFound || res.Status == http.StatusMethodNotAllowed {
			return // an undocumented path: the server must say so
		}
		t.Fatalf("%s %s: answered %d but the path is not in openapi.json", method, path, res.Status)
	}
	m := strings.ToLower(method)
	ops := spec["paths"].(map[string]any)[tmpl].(map[string]any)
	opv, ok := ops[m]
	if !ok {
		if res.Status == http.StatusMethodNotAllowed {
			return
		}
		t.Fatalf("%s %s: answered %d but %s %s is not in openapi.json", method, path, res.Status, method, tmpl)
	}
	resps := opv.(map[string]any)["responses"].(map[string]any)
	code := strconv.Itoa(res.Status)
	rv, ok := resps[code]
	if !ok {
		if rv, ok = resps["default"]; !ok || res.Status < 400 {
			t.Fatalf("%s %s: status %d is not documented for %s %s", method, path, res.Status, method, tmpl)
		}
		code = "default"
	}
	content, _ := rv.(map[string]any)["content"].(map[string]any)
	if len(content) == 0 {
		if len(res.Body) != 0 {
			t.Fatalf("%s %s: %d documented without a body, got %q", method, path, res.Status, res.Body)
		}
		return
	}
	ct := strings.TrimSpace(strings.SplitN(res.Header.Get("Content-Type"), ";", 2)[0])
	media, ok := content[ct]
	if !ok {
		t.Fatalf("%s %s: %d answered with %q, documented: %v", method, path, res.Status, ct, keys(content))
	}
	if ct != "application/json" && ct != "application/problem+json" {
		return
	}
	if _, ok := media.(map[string]any)["schema"]; !ok {
		return
	}
	ptr := "mem://loom/openapi.json#/paths/" + pointerEscape(tmpl) + "/" + m + "/responses/" + code + "/content/" + pointerEscape(ct) + "/schema"
	var sch *jsonschema.Schema
	if v, ok := schemas.Load(ptr); ok {
		sch = v.(*jsonschema.Schema)
	} else {
		var err error
		if sch, err = compiler.Compile(ptr); err != nil {
			t.Fatalf("compile %s: %v", ptr, err)
		}
		schemas.Store(ptr, sch)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(res.Body))
	if err != nil {
		t.Fatalf("%s %s: %d body is not JSON: %v\n%s", method, path, res.Status, err, res.Body)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("%s %s: %d body does not match openapi.json:\n%v\nbody: %.2000s", method, path, res.Status, err, res.Body)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
