package render

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
)

// With memory.store: postgres in loom.yaml, loom render shows the memories
// PostgreSQL holds (what loom serve's replicas and loom chat write), not
// the folder's SQLite database.
func TestRenderReadsPostgresMemories(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	t.Setenv("LOOM_TEST_RENDER_DSN", dsn)
	t.Setenv("LOOM_MEMORY_STORE", "")
	t.Setenv("LOOM_PG_WORKSPACE", "rendertest/"+t.Name()+"/"+time.Now().Format(time.RFC3339Nano))
	dir := writeWS(t, map[string]string{
		"loom.yaml": "preset: assistant\nmemory:\n  store: postgres\n  dsn_env: LOOM_TEST_RENDER_DSN\n",
		"AGENTS.md": "Be kind.\n",
	})
	ctx := context.Background()
	db, err := pgstore.Open(ctx, dsn, pgstore.WithoutListen())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mem := db.Memory(pgstore.WorkspaceKey(dir))
	defer mem.Close()
	if _, err := mem.Add(ctx, memory.NewMemory{Category: memory.DefaultCategories[0].Name, Content: "The team deploys on Thursdays"}); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "-w", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "The team deploys on Thursdays") {
		t.Errorf("the prompt lacks the memory stored in PostgreSQL:\n%s", out)
	}
	if _, err := os.Stat(dir + "/.loom/memory.db"); err == nil {
		t.Error("loom render made a SQLite memory.db with memory.store: postgres")
	}

	// The variable empty: a clear error naming it, not a render without
	// the memories.
	t.Setenv("LOOM_TEST_RENDER_DSN", "")
	_, _, err = run(t, "-w", dir)
	if err == nil || !strings.Contains(err.Error(), "LOOM_TEST_RENDER_DSN") {
		t.Errorf("render with the DSN variable empty: %v, want an error naming LOOM_TEST_RENDER_DSN", err)
	}
}
