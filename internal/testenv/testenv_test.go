package testenv_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/internal/testenv"
)

// fakeTB records how a helper stopped the test.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Fatal(args ...any) { f.fatal = args[0].(string); panic(stop{}) }
func (f *fakeTB) Skip(args ...any)  { f.skip = args[0].(string); panic(stop{}) }

type stop struct{}

func run(f func()) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stop); !ok {
				panic(r)
			}
		}
	}()
	f()
}

func TestMissingSkipsOrFails(t *testing.T) {
	t.Setenv("LOOM_TEST_PG_DSN", "")
	t.Setenv("LOOM_REQUIRE_ALL", "")
	tb := &fakeTB{TB: t}
	run(func() { testenv.PostgresDSN(tb) })
	if tb.skip == "" || tb.fatal != "" || tb.skip[:15] != "NEEDS postgres:" {
		t.Fatalf("without LOOM_REQUIRE_ALL: skip=%q fatal=%q", tb.skip, tb.fatal)
	}
	t.Setenv("LOOM_REQUIRE_ALL", "1")
	tb = &fakeTB{TB: t}
	run(func() { testenv.PostgresDSN(tb) })
	if tb.fatal == "" || tb.skip != "" {
		t.Fatalf("with LOOM_REQUIRE_ALL=1: skip=%q fatal=%q", tb.skip, tb.fatal)
	}
}

func TestNodeModulesChecksPackages(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOOM_TEST_NODE_MODULES", dir)
	t.Setenv("LOOM_REQUIRE_ALL", "")
	tb := &fakeTB{TB: t}
	run(func() { testenv.NodeModules(tb, "openai") })
	if tb.skip == "" {
		t.Fatalf("an empty node_modules was accepted")
	}
	os.MkdirAll(filepath.Join(dir, "openai"), 0o755)
	os.WriteFile(filepath.Join(dir, "openai", "package.json"), []byte("{}"), 0o644)
	t.Setenv("PATH", "") // no node
	tb = &fakeTB{TB: t}
	run(func() { testenv.NodeModules(tb, "openai") })
	if tb.skip == "" || tb.skip[:11] != "NEEDS node:" {
		t.Fatalf("missing node: skip=%q", tb.skip)
	}
}

func TestPostgresDSNReturnsVariable(t *testing.T) {
	t.Setenv("LOOM_TEST_PG_DSN", "postgres://x@localhost/db")
	if got := testenv.PostgresDSN(t); got != "postgres://x@localhost/db" {
		t.Fatalf("got %q", got)
	}
}
