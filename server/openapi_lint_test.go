package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/server"
)

// TestOpenAPILint runs Redocly's linter with its recommended rules
// (redocly.yaml turns off info-license only) over the OpenAPI document: no
// error and no warning. (The typed client built from
// the document is gateway's TestTypedClient.)
var problems = regexp.MustCompile(`(?m)^\s*(warning|error)\s+[a-z0-9-]+: \d+`)

func TestOpenAPILint(t *testing.T) {
	nm := testenv.NodeModules(t, "@redocly/cli")
	tmp := t.TempDir()
	doc := filepath.Join(tmp, "openapi.json")
	if err := os.WriteFile(doc, server.OpenAPI(), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(nm, "@redocly", "cli", "bin", "cli.js"), "lint", "--format=summary", "--config", filepath.Join(wd, "redocly.yaml"), doc)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.CombinedOutput()
	// The summary lists each rule broken ("warning info-license: 1") and
	// ends "You have N warnings."; Node's own deprecation notice is not
	// the document's.
	if err != nil || problems.Match(out) || strings.Contains(string(out), "You have") || !strings.Contains(string(out), "is valid") {
		t.Fatalf("redocly lint: %v\n%s", err, out)
	}
}
