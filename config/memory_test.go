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
