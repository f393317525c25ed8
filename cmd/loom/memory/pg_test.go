package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
)

// The subcommands work the same on PostgreSQL, chosen by the operator's
// flag, with the DSN from the named variable; export --files writes the
// memory files kept in the database.
func TestPostgresStore(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	t.Setenv("LOOM_PG_DSN_TEST", dsn)
	t.Setenv("LOOM_PG_WORKSPACE", "cmdtest/"+t.Name()+"/"+time.Now().Format(time.RFC3339Nano))
	ws := t.TempDir()
	pg := []string{"-w", ws, "--store", "postgres", "--dsn-env", "LOOM_PG_DSN_TEST"}
	a := strings.TrimSpace(mustRun(t, append([]string{"add"}, append(pg, "Respond in French")...)...))
	mustRun(t, append([]string{"add", "--supersedes", a}, append(pg, "Respond in German")...)...)
	_, _, err := run(t, append([]string{"add", "--user", "alex", "--supersedes", a}, append(pg, "x")...)...)
	if err == nil || !strings.Contains(err.Error(), "already superseded") {
		t.Errorf("second supersede: err = %v", err)
	}
	out := mustRun(t, append([]string{"list"}, pg...)...)
	if !strings.Contains(out, "Respond in German\n") || strings.Contains(out, "French") { // stored as typed (#31)
		t.Errorf("list:\n%s", out)
	}
	exported := mustRun(t, append([]string{"export"}, pg...)...)
	if n := strings.Count(exported, "\n"); n != 2 {
		t.Errorf("export has %d lines:\n%s", n, exported)
	}
	if _, err := os.Stat(filepath.Join(ws, ".loom")); !os.IsNotExist(err) {
		t.Errorf("a postgres run made .loom in the workspace: %v", err)
	}

	// The memory files kept beside the sessions come out as files.
	db, err := pgstore.Open(context.Background(), dsn, pgstore.WithoutListen())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := db.Sessions(pgstore.WorkspaceKey(ws))
	if err := s.Consolidate(context.Background(), "k", 0, 0, pgstore.MemoryFiles{Memory: "# Memory\n", HistoryAppend: "[entry]\n\n"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Consolidate(context.Background(), "k", 0, 0, pgstore.MemoryFiles{User: "../alex", Memory: "# Alex\n"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mustRun(t, append([]string{"export", "--files", dir}, pg...)...)
	for name, want := range map[string]string{"MEMORY.md": "# Memory\n", "HISTORY.md": "[entry]\n\n", "users/..%2Falex/MEMORY.md": "# Alex\n"} {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}

	// Without the variable, a clear error that names it.
	t.Setenv("LOOM_PG_DSN_TEST", "")
	if _, _, err := run(t, append([]string{"list"}, pg...)...); err == nil || !strings.Contains(err.Error(), "LOOM_PG_DSN_TEST") {
		t.Errorf("missing DSN: err = %v", err)
	}
	if _, _, err := run(t, "export", "-w", ws, "--files", dir); err == nil {
		t.Errorf("--files with SQLite accepted")
	}
}

// loom.yaml's memory.store and memory.dsn_env choose PostgreSQL for the
// CLI as they do for loom serve, and a memory added by the CLI is the
// server's (one workspace key).
func TestPostgresChosenByLoomYAML(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	t.Setenv("LOOM_TEAM_DSN", dsn)
	t.Setenv("LOOM_MEMORY_STORE", "")
	t.Setenv("LOOM_PG_WORKSPACE", "cmdtest/"+t.Name()+"/"+time.Now().Format(time.RFC3339Nano))
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "loom.yaml"), []byte("memory:\n  store: postgres\n  dsn_env: LOOM_TEAM_DSN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "add", "-w", ws, "Respond in Welsh")
	if out := mustRun(t, "list", "-w", ws); !strings.Contains(out, "Respond in Welsh\n") {
		t.Errorf("list:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".loom", "memory.db")); !os.IsNotExist(err) {
		t.Errorf("loom.yaml chose postgres but memory.db was made: %v", err)
	}
	db, err := pgstore.Open(context.Background(), dsn, pgstore.WithoutListen())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	list, err := db.Memory(pgstore.WorkspaceKey(ws)).List(context.Background(), memory.Query{})
	if err != nil || len(list) != 1 {
		t.Fatalf("in the database: %v, %v", list, err)
	}
	// --store sqlite still wins.
	if out := mustRun(t, "list", "-w", ws, "--store", "sqlite"); strings.Contains(out, "Welsh") {
		t.Errorf("--store sqlite listed PostgreSQL's memories:\n%s", out)
	}
}

// On PostgreSQL an import streams too, with the same errors naming the
// line, and is all or nothing: after a refused file the store is empty,
// also when the bad line comes after thousands of good ones.
func TestPostgresImportBadLines(t *testing.T) {
	t.Setenv("LOOM_PG_DSN_TEST", testenv.PostgresDSN(t))
	var many strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&many, `{"id":"m%d","category":"global_rule","content":"Rule %d."}`+"\n", i, i)
	}
	cases := append(badLines(), badLine{"after 3,000 good lines", many.String() + `{"id":"z","category":"global_rule"`, "m.jsonl:3003: unexpected EOF"})
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LOOM_PG_WORKSPACE", "cmdtest/"+t.Name()+"/"+time.Now().Format(time.RFC3339Nano))
			pg := []string{"-w", t.TempDir(), "--store", "postgres", "--dsn-env", "LOOM_PG_DSN_TEST"}
			file := filepath.Join(t.TempDir(), "m.jsonl")
			os.WriteFile(file, []byte(goodLine+"\n\n"+tt.line+"\n"), 0o644)
			_, _, err := run(t, append([]string{"import", file}, pg...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tt.want)
			}
			if out := mustRun(t, append([]string{"export"}, pg...)...); out != "" {
				t.Errorf("a failed import left %d memories", strings.Count(out, "\n"))
			}
		})
	}
}
