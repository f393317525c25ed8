package template_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/testenv"
)

// reflectMethodCallers builds the package in dir and returns the functions
// the linker found reachable that call a method by a name known only at
// run time (reflect.Value.MethodByName or Method with a computed argument):
// the linker's dependency dump marks them <ReflectMethod>. One such caller
// makes the linker keep every exported method of every type that might
// reach it, which is what this package exists to avoid (see the package
// doc). A call with a constant name, as protobuf's descfmt makes, keeps
// that one method only and is not marked.
func reflectMethodCallers(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "bin"), ".")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", dir, err, out.Bytes())
	}
	seen := map[string]bool{}
	var callers []string
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		for _, side := range strings.Split(sc.Text(), " -> ") {
			if name, ok := strings.CutSuffix(side, " <ReflectMethod>"); ok && !seen[name] {
				seen[name] = true
				callers = append(callers, name)
			}
		}
	}
	return callers
}

// loom's binary links no call of a method by a run-time name: the saving
// internal/template was written for (text/template's field lookup made the
// linker keep a tenth of the binary) still holds. A program that uses
// text/template is flagged, so the check can fail.
func TestLoomLinksNoMethodByName(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the loom binary")
	}
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Missing(t, "the go command", "put it on PATH")
	}
	if got := reflectMethodCallers(t, "testdata/reflectmethod"); len(got) == 0 {
		t.Fatal("a program using text/template shows no caller of a method by name: the check is blind")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "cmd", "loom")
	if got := reflectMethodCallers(t, root); len(got) > 0 {
		t.Fatalf("cmd/loom links calls of methods by a run-time name, so the linker keeps every exported method: %v", got)
	}
}
