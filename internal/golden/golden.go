// Package golden compares test output with files under testdata/. Run a
// package's tests with -update to rewrite them; read every diff before
// committing it, because a changed golden file is a change in behaviour.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Check compares got with testdata/<name>.golden. With -update it writes got
// there instead.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run go test -update to create it)", path, err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs at %s\n--- got ---\n%s\n--- want ---\n%s", path, firstDiff(string(got), string(want)), got, want)
	}
}

// firstDiff names the line and column of the first difference.
func firstDiff(a, b string) string {
	line, col := 1, 1
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return lineCol(line, col)
		}
		if a[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return lineCol(line, col) + " (one is a prefix of the other)"
}

func lineCol(line, col int) string {
	var b strings.Builder
	b.WriteString("line ")
	b.WriteString(strconv.Itoa(line))
	b.WriteString(", column ")
	b.WriteString(strconv.Itoa(col))
	return b.String()
}
