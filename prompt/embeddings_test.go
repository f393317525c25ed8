package prompt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/embedding/embeddingtest"
	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/memory/storetest"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// embeddingsWorkspace writes a workspace whose loom.yaml has extra under
// memory:, with one memory about a car that shares no word with "Which
// car?" (the fake endpoint gives "automobile" the meaning of "car"), one
// that has the word, and 120 newer ones that fill the system prompt's
// share of the budget.
func embeddingsWorkspace(t *testing.T, extra string) (dir string, s *memory.SQLite) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte("memory:\n  budget: 300\n"+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := memory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ms := carMemories()
	if err := s.Import(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// carMemories are embeddingsWorkspace's memories.
func carMemories() []memory.Memory {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := []memory.Memory{
		{ID: "m_auto", Category: "personal_fact", User: "mira", Content: "Mira bought a red automobile last spring.", CreatedAt: t0},
		{ID: "m_park", Category: "personal_fact", User: "mira", Content: "The car park at work shuts on Sundays.", CreatedAt: t0.Add(time.Minute)},
	}
	for i := range 120 {
		ms = append(ms, memory.Memory{ID: fmt.Sprintf("m_fill%03d", i), Category: "personal_fact", User: "mira",
			Content: fmt.Sprintf("Filler note %d about pottery class %d.", i, i), CreatedAt: t0.Add(time.Duration(i+2) * time.Hour)})
	}
	return ms
}

func newBuilder(t *testing.T, dir string) *prompt.Builder {
	t.Helper()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	b := prompt.New(ws)
	t.Cleanup(func() { b.Close() })
	return b
}

func recalledIDs(r *memory.Recall) map[string]string {
	out := map[string]string{}
	for _, m := range r.Memories {
		out[m.Memory.ID] = m.Why
	}
	return out
}

// With memory.embeddings, the builder's worker gives the store's memories
// vectors in the background, and a turn's recall fuses the ranking by
// meaning with the ranking by words: the memory that shares no word with
// the message is recalled, and its why says it was found by meaning. The
// system prompt stays byte for byte the same across turns, and the same
// as without embeddings. When the endpoint fails or is slow, the turn
// falls back to words and says so.
func TestRecallWithEmbeddings(t *testing.T) {
	f := embeddingtest.New(t)
	f.Synonyms["automobile"] = "car"
	dir, s := embeddingsWorkspace(t, "  embeddings:\n    base_url: "+f.BaseURL()+"\n    model: fake\n    query_timeout: 300ms\n")
	b := newBuilder(t, dir)
	ctx := context.Background()
	opts := prompt.Options{User: "mira", GOOS: "linux", GOARCH: "amd64"}
	res, err := b.Render(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Prompt, "automobile") || !strings.Contains(res.Prompt, "Filler note") {
		t.Fatal("the car memory should be left out of the system prompt for this test")
	}
	first := res.Prompt

	// The first turn starts the worker; wait until it is done.
	b.Recall(ctx, res, "Which car?", "")
	storetest.WaitEmbedded(t, s, "fake")
	r := b.Recall(ctx, res, "Which car?", "")
	if r.Ranking != memory.RankingFused || r.Fallback != "" {
		t.Fatalf("ranking %q, fallback %q", r.Ranking, r.Fallback)
	}
	got := recalledIDs(r)
	if why := got["m_auto"]; !strings.HasPrefix(why, "close in meaning (cosine 0.") {
		t.Errorf("the car memory: why %q (recalled %v)", why, got)
	}
	if why := got["m_park"]; !strings.HasPrefix(why, "matched car") {
		t.Errorf("the car park memory: why %q", why)
	}

	// Without embeddings the car memory is not found at all.
	plainDir, _ := embeddingsWorkspace(t, "")
	pb := newBuilder(t, plainDir)
	pres, err := pb.Render(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if pres.Prompt != first {
		t.Error("the system prompt differs with embeddings")
	}
	pr := pb.Recall(ctx, pres, "Which car?", "")
	if _, ok := recalledIDs(pr)["m_auto"]; ok || pr.Ranking != "" {
		t.Errorf("without embeddings: recalled %v, ranking %q", recalledIDs(pr), pr.Ranking)
	}

	// The endpoint down: the same message is answered from the cache of
	// query vectors; a new one falls back to words, and says so.
	f.SetDown(true)
	calls := f.Calls()
	if r := b.Recall(ctx, res, "Which car?", ""); r.Ranking != memory.RankingFused || f.Calls() != calls {
		t.Errorf("a repeated message: ranking %q, %d calls", r.Ranking, f.Calls()-calls)
	}
	r = b.Recall(ctx, res, "Which car is it?", "")
	if !strings.HasPrefix(r.Ranking, "words only: embedding: ") || !strings.Contains(r.Ranking, "answered 503") {
		t.Errorf("endpoint down: ranking %q", r.Ranking)
	}
	if _, ok := recalledIDs(r)["m_park"]; !ok || r.Fallback != "" {
		t.Errorf("endpoint down: recalled %v, fallback %q", recalledIDs(r), r.Fallback)
	}

	// A slow endpoint costs the turn the query timeout, no more.
	f.SetDown(false)
	f.SetReply(func(w http.ResponseWriter, _ []string) bool { time.Sleep(2 * time.Second); return false })
	start := time.Now()
	r = b.Recall(ctx, res, "Which car was it again?", "")
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("a slow endpoint held the turn %v", d)
	}
	if r.Ranking != "words only: embedding: no answer from the endpoint within 300ms" {
		t.Errorf("slow endpoint: ranking %q", r.Ranking)
	}
	f.SetReply(nil)

	// The system prompt never moved.
	for _, msg := range []string{"Which car?", "pottery"} {
		res, err := b.Render(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		b.Recall(ctx, res, msg, "")
		if res.Prompt != first {
			t.Fatalf("the system prompt changed after a turn about %q", msg)
		}
	}
}

// Without memory.embeddings nothing is called and the recall's JSON has
// no ranking.
func TestRecallWithoutEmbeddingsCallsNothing(t *testing.T) {
	f := embeddingtest.New(t)
	dir, _ := embeddingsWorkspace(t, "")
	b := newBuilder(t, dir)
	ctx := context.Background()
	res, err := b.Render(ctx, prompt.Options{User: "mira"})
	if err != nil {
		t.Fatal(err)
	}
	r := b.Recall(ctx, res, "Which car?", "")
	js, _ := json.Marshal(r)
	if strings.Contains(string(js), "ranking") || f.Calls() != 0 {
		t.Errorf("recall %s; %d calls", js, f.Calls())
	}
}

// A key the operator did not allow to go to the workspace's endpoint is
// not sent: the recall is by words, and says why.
func TestRecallEmbeddingsKeyRefused(t *testing.T) {
	f := embeddingtest.New(t)
	t.Setenv("LOOM_TEST_EMBED_KEY", "sk-notforyou123")
	t.Setenv("LOOM_ALLOWED_ENDPOINTS", "")
	t.Setenv("LOOM_LLM_BASE_URL", "")
	dir, _ := embeddingsWorkspace(t, "  embeddings:\n    base_url: "+f.BaseURL()+"\n    model: fake\n    api_key_env: LOOM_TEST_EMBED_KEY\n")
	b := newBuilder(t, dir)
	ctx := context.Background()
	res, err := b.Render(ctx, prompt.Options{User: "mira"})
	if err != nil {
		t.Fatal(err)
	}
	r := b.Recall(ctx, res, "Which car?", "")
	if !strings.HasPrefix(r.Ranking, "words only: secret refused") || strings.Contains(r.Ranking, "sk-notforyou") || f.Calls() != 0 {
		t.Errorf("ranking %q, %d calls", r.Ranking, f.Calls())
	}
	if _, ok := recalledIDs(r)["m_park"]; !ok {
		t.Errorf("recalled %v", recalledIDs(r))
	}
}

// The same recall with the memories in PostgreSQL (a builder's memory
// source, as a server with --store postgres has): the worker fills the
// vectors there, and the search by meaning finds the car memory.
func TestRecallWithEmbeddingsPostgres(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	f := embeddingtest.New(t)
	f.Synonyms["automobile"] = "car"
	dir, _ := embeddingsWorkspace(t, "  embeddings:\n    base_url: "+f.BaseURL()+"\n    model: fake\n")
	ctx := context.Background()
	db, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mem := db.Memory(fmt.Sprintf("%s/%d", t.Name(), time.Now().UnixNano()))
	t.Cleanup(func() { mem.Close() })
	if err := mem.Import(ctx, carMemories()); err != nil {
		t.Fatal(err)
	}
	b := newBuilder(t, dir)
	b.SetMemorySource(mem)
	res, err := b.Render(ctx, prompt.Options{User: "mira"})
	if err != nil {
		t.Fatal(err)
	}
	b.Recall(ctx, res, "Which car?", "")
	storetest.WaitEmbedded(t, mem, "fake")
	r := b.Recall(ctx, res, "Which car?", "")
	got := recalledIDs(r)
	if r.Ranking != memory.RankingFused || !strings.HasPrefix(got["m_auto"], "close in meaning (cosine 0.") || !strings.HasPrefix(got["m_park"], "matched car") {
		t.Errorf("ranking %q, recalled %v", r.Ranking, got)
	}
}
