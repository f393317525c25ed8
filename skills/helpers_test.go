package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/workspace"
)

// testCache is the cache folder the package's tests write built-in skills
// to, so that they leave the user's own cache alone.
var testCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loom-skills-cache-")
	if err != nil {
		panic(err)
	}
	testCache = dir
	os.Setenv(EnvCacheDir, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeFiles creates files under dir from a map of slash paths to contents.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openWS(t testing.TB, dir string) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() }) // stops the watcher a Watch started
	return ws
}

// env is a fixed machine: only the named programs exist, only the named
// variables are set.
func env(bins []string, vars map[string]string, goos string) Options {
	return Options{
		LookPath: func(b string) (string, error) {
			for _, x := range bins {
				if x == b {
					return "/usr/bin/" + b, nil
				}
			}
			return "", errors.New("not found")
		},
		Getenv:   func(k string) string { return vars[k] },
		GOOS:     goos,
		CacheDir: testCache,
	}
}

func skillMD(name, desc string, extra ...string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n" + strings.Join(extra, "\n") + "---\n\n# " + name + "\n\nDo the " + name + " thing.\n"
}

func diagStrings(ds workspace.Diagnostics) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

func openWSErr(dir string) (*workspace.Workspace, error) { return workspace.Open(dir) }
