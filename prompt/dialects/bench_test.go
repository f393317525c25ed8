package dialects

import (
	"testing"

	"github.com/loomctx/loom/workspace"
)

func BenchmarkLoadAndFor(b *testing.B) {
	ws, err := workspace.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	types := []string{"postgres", "snowflake", "BigQuery", "postgres"}
	for b.Loop() {
		var diags workspace.Diagnostics
		set, err := Load(ws, &diags)
		if err != nil {
			b.Fatal(err)
		}
		if len(set.For(types)) != 3 {
			b.Fatal("wrong dialects")
		}
	}
}
