// Package testenv finds the outside components some tests need: a
// node_modules folder with the official JavaScript clients, a PostgreSQL
// server, a Chromium binary.
//
// Each helper returns what the test needs or stops the test. When the
// component is missing, the test is skipped with a message naming the
// variable to set, unless LOOM_REQUIRE_ALL=1 (as CI's .ci/run sets), where a
// missing component fails the test: a suite that must run everything cannot
// pass by skipping.
//
// Messages start with "NEEDS <component>:" so a run's skips can be found
// with grep. Other packages may add a helper for their own component in
// their own file here, following [Missing].
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireAll reports whether LOOM_REQUIRE_ALL=1, where a missing component
// fails a test instead of skipping it.
func RequireAll() bool { return os.Getenv("LOOM_REQUIRE_ALL") == "1" }

// Missing stops t because component is missing: t.Fatalf under
// LOOM_REQUIRE_ALL=1, else t.Skipf. how says how to provide it.
func Missing(t testing.TB, component, how string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf("NEEDS %s: %s", component, fmt.Sprintf(how, args...))
	if RequireAll() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// NodeModules returns the node_modules folder named by LOOM_TEST_NODE_MODULES,
// after checking that it holds the packages named (for example "openai",
// "@modelcontextprotocol/sdk") and that node is on PATH.
func NodeModules(t testing.TB, packages ...string) string {
	t.Helper()
	dir := os.Getenv("LOOM_TEST_NODE_MODULES")
	if dir == "" {
		Missing(t, "node_modules", "set LOOM_TEST_NODE_MODULES to a node_modules folder holding %v (npm install --prefix DIR openai @modelcontextprotocol/sdk)", packages)
		return ""
	}
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p), "package.json")); err != nil {
			Missing(t, "node_modules", "LOOM_TEST_NODE_MODULES=%s has no package %s", dir, p)
			return ""
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		Missing(t, "node", "no node on PATH")
		return ""
	}
	return dir
}

// PostgresDSN returns the DSN in LOOM_TEST_PG_DSN (scripts/pg-test.sh starts
// a throwaway server and sets it).
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("LOOM_TEST_PG_DSN")
	if dsn == "" {
		Missing(t, "postgres", "set LOOM_TEST_PG_DSN (scripts/pg-test.sh starts a throwaway server)")
	}
	return dsn
}

// Chromium returns the Chromium binary in LOOM_TEST_CHROMIUM, else the first
// of chromium, chromium-browser or google-chrome found on PATH.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LOOM_TEST_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			Missing(t, "chromium", "LOOM_TEST_CHROMIUM=%s: %v", p, err)
			return ""
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "chromium", "set LOOM_TEST_CHROMIUM or put chromium on PATH")
	return ""
}
