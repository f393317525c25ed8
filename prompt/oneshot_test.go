package prompt_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/examples"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// TestOneShotRendersTheSame holds a one-shot builder, which keeps no parts
// between renders, to New's: the same prompt and the same report (as JSON)
// on every example workspace and the incremental tests' one, with and
// without a budget and counts, twice in a row.
func TestOneShotRendersTheSame(t *testing.T) {
	dirs := map[string]string{"incremental": incrementalWorkspace(t)}
	for _, name := range examples.Names() {
		fsys, err := examples.FS(name)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), name)
		if err := os.CopyFS(dir, fsys); err != nil {
			t.Fatal(err)
		}
		dirs[name] = dir
	}
	for name, dir := range dirs {
		for _, opts := range []prompt.Options{
			{},
			{NoCounts: true},
			{Budget: 600},
			{Budget: 2500, Preset: prompt.Assistant},
			{Preset: prompt.Analyst},
		} {
			opts.GOOS, opts.GOARCH = "linux", "amd64"
			want := renderAll(t, prompt.New, dir, opts)
			got := renderAll(t, prompt.NewOneShot, dir, opts)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%s %+v, render %d: one-shot differs from New:\n%s\nwant:\n%s", name, opts, i+1, got[i], want[i])
				}
			}
		}
	}
}

// renderAll renders dir twice with a builder from newBuilder and returns
// each result, prompt and report, as JSON.
func renderAll(t *testing.T, newBuilder func(*workspace.Workspace) *prompt.Builder, dir string, opts prompt.Options) []string {
	t.Helper()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := newBuilder(ws)
	defer b.Close()
	var out []string
	for range 2 {
		res, err := b.Render(context.Background(), opts)
		if res == nil {
			t.Fatalf("%s %+v: %v", dir, opts, err)
		}
		j, jerr := json.Marshal(res)
		if jerr != nil {
			t.Fatal(jerr)
		}
		out = append(out, string(j)+"\nerr: "+errString(err))
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
