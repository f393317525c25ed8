package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestMemoryStoreLocation(t *testing.T) {
	t.Setenv(EnvMemoryDB, "")
	root := t.TempDir()
	got, err := MemoryStoreLocation(root, nil)
	if want := filepath.Join(root, ".loom", "memory.db"); err != nil || got != want {
		t.Errorf("default: %q, %v; want %q", got, err, want)
	}
	cfg, err := Parse("loom.yaml", []byte("memory:\n  db: data/./mem.db\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err = MemoryStoreLocation(root, cfg)
	if want := filepath.Join(root, "data", "mem.db"); err != nil || got != want {
		t.Errorf("loom.yaml: %q, %v; want %q", got, err, want)
	}

	// The operator wins, and may name any place.
	op := filepath.Join(t.TempDir(), "elsewhere.db")
	t.Setenv(EnvMemoryDB, op)
	if got, err = MemoryStoreLocation(root, cfg); err != nil || got != op {
		t.Errorf("operator: %q, %v; want %q", got, err, op)
	}
}

// loom.yaml may not send the store outside the workspace, neither when it
// is parsed nor when a hand-built Config reaches the resolver.
func TestMemoryStoreLocationRefusesOutside(t *testing.T) {
	t.Setenv(EnvMemoryDB, "")
	for _, db := range []string{"../other/memory.db", "/etc/memory.db", "a/../../x.db", "..", ".", `C:\x.db`, `sub\x.db`} {
		_, err := Parse("loom.yaml", []byte("name: x\nmemory:\n  db: '"+db+"'\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "loom.yaml:3: memory.db: ") {
			t.Errorf("parse memory.db %q: got %v", db, err)
		}
		cfg := Default()
		cfg.Memory.DB = db
		got, err := MemoryStoreLocation(t.TempDir(), cfg)
		if err == nil {
			t.Errorf("resolve memory.db %q: got %q and no error", db, got)
		}
	}
	_, err := Parse("loom.yaml", []byte("memory:\n  db: /abs/m.db\n"))
	if err == nil || !strings.Contains(err.Error(), "--memory-db or LOOM_MEMORY_DB") {
		t.Errorf("the error should say how the operator chooses an outside file: %v", err)
	}
}

func TestMemoryStoreChoice(t *testing.T) {
	cfg, err := Parse("loom.yaml", []byte("memory:\n  store: postgres\n  dsn_env: LOOM_TEAM_DSN\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Memory.StoreKind() != StorePostgres || cfg.Memory.DSNVar() != "LOOM_TEAM_DSN" {
		t.Errorf("got store %q dsn_env %q", cfg.Memory.StoreKind(), cfg.Memory.DSNVar())
	}
	if d := Default(); d.Memory.StoreKind() != StoreSQLite || d.Memory.DSNVar() != DefaultDSNEnv {
		t.Errorf("defaults: store %q dsn_env %q", d.Memory.StoreKind(), d.Memory.DSNVar())
	}
	for _, c := range []struct{ yaml, want string }{
		{"name: x\nmemory:\n  store: mysql\n", `loom.yaml:3: memory.store: "mysql" is not one of sqlite, postgres`},
		{"name: x\nmemory:\n  store: postgres\n  dsn_env: HOME\n", `loom.yaml:4: memory.dsn_env: "HOME" does not start with LOOM_`},
		{"name: x\nmemory:\n  dsn_env: 'LOOM PG'\n", `loom.yaml:3: memory.dsn_env: "LOOM PG" is not an environment variable name`},
		{"memory:\n  stor: postgres\n", "loom.yaml:2"},
	} {
		_, err := Parse("loom.yaml", []byte(c.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %s…", c.yaml, err, c.want)
		}
	}
}

func TestMemoryEmbeddings(t *testing.T) {
	cfg, err := Parse("loom.yaml", []byte("memory:\n  embeddings:\n    base_url: http://127.0.0.1:8080/v1\n    model: tiny\n    api_key_env: LOOM_EMBED_KEY\n    dimensions: 64\n    query_timeout: 200ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Memory.Embeddings
	if e == nil || e.BaseURL != "http://127.0.0.1:8080/v1" || e.Model != "tiny" || e.APIKeyEnv != "LOOM_EMBED_KEY" || e.Dimensions != 64 || e.QueryTimeout.String() != "200ms" {
		t.Fatalf("parsed %+v", e)
	}
	if cfg, err := Parse("loom.yaml", []byte("memory:\n  budget: 10\n")); err != nil || cfg.Memory.Embeddings != nil {
		t.Errorf("no embeddings key: %+v, %v", cfg.Memory.Embeddings, err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"    base_url: ftp://x/v1\n    model: m\n", "loom.yaml:3: memory.embeddings.base_url: \"ftp://x/v1\" is not an http or https URL"},
		{"    model: m\n", "memory.embeddings.base_url: \"\" is not an http or https URL"},
		{"    base_url: http://x/v1\n", "memory.embeddings.model: must name the embedding model"},
		{"    base_url: http://x/v1\n    model: m\n    api_key_env: 'A B'\n", "loom.yaml:5: memory.embeddings.api_key_env: \"A B\" is not an environment variable name"},
		{"    base_url: http://x/v1\n    model: m\n    dimensions: 100000\n", "loom.yaml:5: memory.embeddings.dimensions: must be between 1 and 8192, got 100000"},
		{"    base_url: http://x/v1\n    model: m\n    query_timeout: 1h\n", "loom.yaml:5: memory.embeddings.query_timeout: must be longer than 0s and at most 30s"},
		{"    base_url: http://x/v1\n    model: m\n    modle: n\n", "modle"},
	} {
		_, err := Parse("loom.yaml", []byte("memory:\n  embeddings:\n"+c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}
