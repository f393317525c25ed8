package naoproject

import (
	"slices"
	"testing"
	"testing/fstest"

	"github.com/loomctx/loom/workspace"
)

// The database name nao derives from a DuckDB path (utils/nao-config.ts).
func TestNameFromPath(t *testing.T) {
	for in, want := range map[string]string{
		"./jaffle_shop.duckdb":    "jaffle_shop",
		"/data/warehouse.db?ro=1": "warehouse",
		":memory:":                "memory",
		"md:analytics":            "analytics",
		"MotherDuck:":             "motherduck",
		"data/no_extension":       "no_extension",
		"data/.hidden":            ".hidden",
	} {
		if got := nameFromPath(in); got != want {
			t.Errorf("nameFromPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// getnao's own example nao_config.yaml holds {{ env('NOTION_API_KEY') }},
// which is not YAML: it is read past, never looked up, and the rest counts.
func TestConfigWithEnvPlaceholder(t *testing.T) {
	ws := workspace.OpenFS(fstest.MapFS{ConfigFile: {Data: []byte(`databases:
- name: duckdb-jaffle-shop
  accessors: [columns, preview, how_to_use]
  type: duckdb
  path: ./jaffle_shop.duckdb
repos:
- name: dbt
notion:
  api_key: {{ env('NOTION_API_KEY') }}
  token: "${{ env("OTHER") }}"
`)}})
	var diags workspace.Diagnostics
	cfg := LoadConfig(ws, &diags)
	if len(diags) != 0 || !cfg.Found {
		t.Fatalf("diagnostics %v, found %v", diags, cfg.Found)
	}
	if !slices.Equal(cfg.Templates, []string{"columns", "preview", "query_history"}) || !slices.Equal(cfg.Repos, []string{"dbt"}) ||
		len(cfg.Databases) != 1 || cfg.Databases[0] != (Database{ID: "duckdb-jaffle-shop", Type: "duckdb", Database: "jaffle_shop"}) {
		t.Errorf("config %+v", cfg)
	}
}
