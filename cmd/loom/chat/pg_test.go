package chat

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/session"
)

// With memory.store: postgres in loom.yaml, a chat keeps its session, the
// consolidation's memory files and its memories in PostgreSQL, as loom
// serve's replicas do, and writes none of them into the folder.
func TestChatOnPostgres(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	t.Setenv("LOOM_TEST_CHAT_DSN", dsn)
	t.Setenv("LOOM_MEMORY_STORE", "")
	t.Setenv("LOOM_PG_WORKSPACE", "chattest/"+t.Name()+"/"+time.Now().Format(time.RFC3339Nano))
	s := fake(t, llmtest.OpenAI)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte("memory:\n  store: postgres\n  dsn_env: LOOM_TEST_CHAT_DSN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runChat(t, s, dir, "Hello there\n/new\nSecond session\n", nil)
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.errOut)
	}
	db, err := pgstore.Open(context.Background(), dsn, pgstore.WithoutListen())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := session.NewPGStore(db, pgstore.WorkspaceKey(dir))
	sess, err := st.Load(context.Background(), SessionKey("cli", "ana"))
	if err != nil || len(sess.Messages) != 2 || sess.Messages[0].Content.String() != "Second session" {
		t.Fatalf("session in PostgreSQL after /new: %+v, %v", sess, err)
	}
	mem, _, _ := st.MemoryFile(context.Background(), "ana", pgstore.MemoryFileName)
	hist, _, _ := st.MemoryFile(context.Background(), "ana", pgstore.HistoryFileName)
	if mem != "# Memory\n- The user is Ana\n" || hist != "[2026-03-01 10:00] Ana said hello.\n\n" {
		t.Errorf("memory files in PostgreSQL: %q, %q", mem, hist)
	}
	for _, p := range []string{"memory/MEMORY.md", "memory/HISTORY.md", ".loom/sessions", ".loom/memory.db"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			t.Errorf("%s written to the folder with memory.store: postgres", p)
		}
	}
}
