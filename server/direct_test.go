package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/loomctx/loom/prompt"
)

func renderDirect(t *testing.T, dir string) string {
	t.Helper()
	now, _ := time.Parse(time.RFC3339, "2026-01-02T03:04:05Z")
	res, err := prompt.Render(context.Background(), dir, prompt.Options{Now: now, Preset: "analyst"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Prompt
}
