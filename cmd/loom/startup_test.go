package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOwnInitsAreLight keeps loom's own package initialisation small: every
// command, `loom --version` included, pays for it before main runs. A
// regexp compiled, a template parsed or embedded data decoded into a
// package-level variable belongs behind sync.OnceValue, built on first use.
// The runtime's own trace (GODEBUG=inittrace=1) counts each package's
// allocations, which, unlike its time, do not depend on how busy the machine
// is.
func TestOwnInitsAreLight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "loom")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("loom --version: %v\n%s", err, out)
	}
	const perPackage, total = 40, 200 // allocations; before the lazy change: prompt 378, skills 372, all ~1,700
	sum, seen := 0, 0
	for _, line := range strings.Split(string(out), "\n") {
		// init github.com/loomctx/loom/prompt @7.9 ms, 0 ms clock, 288 bytes, 8 allocs
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/loomctx/loom") || f[10] != "allocs" {
			continue
		}
		n, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("unexpected trace line %q", line)
		}
		seen++
		sum += n
		if n > perPackage {
			t.Errorf("%s: init makes %d allocations (limit %d); build its package-level values on first use", f[1], n, perPackage)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace for loom's packages in:\n%s", out)
	}
	if sum > total {
		t.Errorf("loom's packages make %d allocations at start-up (limit %d)", sum, total)
	}
}
