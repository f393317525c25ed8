package config

import (
	"github.com/loomctx/loom/workspace"
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkLoadConfig(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "config", "full.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Load(ws); err != nil {
			b.Fatal(err)
		}
	}
}
