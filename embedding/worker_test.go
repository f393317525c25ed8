package embedding_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/embedding"
	"github.com/loomctx/loom/embedding/embeddingtest"
	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/memory/storetest"
)

var ctx = context.Background()

// vectorStore is a memory store that keeps vectors.
type vectorStore interface {
	memory.Store
	memory.VectorStore
}

func openStore(t *testing.T) *memory.SQLite {
	t.Helper()
	s, err := memory.OpenSQLite(filepath.Join(t.TempDir(), "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachStore runs fn on a new SQLite store and on a new workspace of
// PostgreSQL's store (NEEDS PostgreSQL: see testenv.PostgresDSN).
func eachStore(t *testing.T, fn func(t *testing.T, s vectorStore)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, openStore(t)) })
	t.Run("postgres", func(t *testing.T) {
		dsn := testenv.PostgresDSN(t)
		db, err := pgstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s := db.Memory(fmt.Sprintf("%s/%d", t.Name(), time.Now().UnixNano()))
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
}

// startWorker runs a worker with short pauses until the test ends.
func startWorker(t *testing.T, s memory.VectorStore, f *embeddingtest.Fake) *embedding.Worker {
	t.Helper()
	w := embedding.NewWorker(s, embedding.NewClient(embedding.ClientConfig{BaseURL: f.BaseURL(), Model: "fake"}))
	w.Poll, w.MinBackoff, w.MaxBackoff, w.Batch = 20*time.Millisecond, 5*time.Millisecond, 40*time.Millisecond, 4
	c, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(c) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func add(t *testing.T, s memory.Store, contents ...string) []memory.Memory {
	t.Helper()
	var ns []memory.NewMemory
	for _, c := range contents {
		ns = append(ns, memory.NewMemory{Category: "personal_fact", Content: c})
	}
	ms, err := s.Add(ctx, ns...)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// A memory written gets its vector in the background: the fake's own
// vector of its text, found by Nearest.
func TestWorkerEmbedsWrites(t *testing.T) { eachStore(t, testWorkerEmbedsWrites) }

func testWorkerEmbedsWrites(t *testing.T, s vectorStore) {
	f := embeddingtest.New(t)
	w := startWorker(t, s, f)
	add(t, s, "Mira plays the cello.", "Mira lives in Porto.")
	w.Notify()
	storetest.WaitEmbedded(t, s, "fake")
	for _, text := range []string{"Mira plays the cello.", "Mira lives in Porto."} {
		hits, err := s.Nearest(ctx, memory.VectorQuery{Model: "fake", Vector: f.Vector(text), Limit: 1})
		if err != nil || len(hits) != 1 || hits[0].Content != text || hits[0].Score < 0.9999 {
			t.Fatalf("nearest to %q: %+v, %v", text, hits, err)
		}
	}
	// The store shows a vector before the worker has counted it.
	waitStats(t, w, func(st embedding.Stats) bool { return st.Embedded == 2 && st.LastError == nil })
}

// waitStats waits, up to 20 seconds, until w's counts satisfy ok.
func waitStats(t *testing.T, w *embedding.Worker, ok func(embedding.Stats) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(w.Stats()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", w.Stats())
		}
	}
}

// With the endpoint down, a write still succeeds at once; the worker
// keeps trying, and fills the vectors in when the endpoint is back.
// A worker started on a store that already has memories (embeddings just
// turned on) fills theirs in too.
func TestWorkerBackfills(t *testing.T) { eachStore(t, testWorkerBackfills) }

func testWorkerBackfills(t *testing.T, s vectorStore) {
	f := embeddingtest.New(t)
	var old []string
	for i := range 10 {
		old = append(old, fmt.Sprintf("Written before embeddings, number %d.", i))
	}
	add(t, s, old...)
	f.SetDown(true)
	w := startWorker(t, s, f)
	start := time.Now()
	add(t, s, "Written while the endpoint is down.")
	if d := time.Since(start); d > time.Second {
		t.Errorf("the write took %v", d)
	}
	w.Notify()
	for w.Stats().Failures < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	if todo, _, _ := s.Unembedded(ctx, "fake", 0, 100); len(todo) != 11 {
		t.Fatalf("%d memories wait, want all 11", len(todo))
	}
	if err := w.Stats().LastError; err == nil || !strings.Contains(err.Error(), "answered 503") {
		t.Errorf("last error %v", err)
	}
	f.SetDown(false)
	storetest.WaitEmbedded(t, s, "fake")
	waitStats(t, w, func(st embedding.Stats) bool { return st.Embedded == 11 })
}

// One memory the endpoint always refuses holds up the others only until
// it has failed alone a few times; then the worker goes on past it.
func TestWorkerPassesOverAPoisonMemory(t *testing.T) {
	f := embeddingtest.New(t)
	f.SetReply(func(w http.ResponseWriter, in []string) bool {
		for _, s := range in {
			if strings.Contains(s, "poison") {
				http.Error(w, `{"error":"input too long"}`, http.StatusBadRequest)
				return true
			}
		}
		return false
	})
	s := openStore(t)
	add(t, s, "first", "poison pill", "third", "fourth", "fifth", "sixth")
	w := startWorker(t, s, f)
	deadline := time.Now().Add(20 * time.Second)
	for {
		todo, _, err := s.Unembedded(ctx, "fake", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(todo) == 1 && todo[0].Content == "poison pill" && w.Stats().Skipped >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting: %+v, stats %+v", todo, w.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Writers and the worker at once: every memory gets exactly its vector.
func TestWorkerConcurrentWriters(t *testing.T) {
	f := embeddingtest.New(t)
	s := openStore(t)
	w := startWorker(t, s, f)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				add(t, s, fmt.Sprintf("writer %d memory %d", g, i))
				w.Notify()
			}
		}()
	}
	wg.Wait()
	storetest.WaitEmbedded(t, s, "fake")
	for g := range 4 {
		text := fmt.Sprintf("writer %d memory %d", g, 24)
		hits, err := s.Nearest(ctx, memory.VectorQuery{Model: "fake", Vector: f.Vector(text), Limit: 1})
		if err != nil || len(hits) != 1 || hits[0].Content != text {
			t.Fatalf("nearest to %q: %+v, %v", text, hits, err)
		}
	}
}

// A hostile endpoint (huge, wrong length, not JSON) stores nothing: the
// worker keeps the memories queued, names what was wrong, and fills them
// in once the endpoint answers properly.
func TestWorkerRefusesHostileReplies(t *testing.T) {
	f := embeddingtest.New(t)
	s := openStore(t)
	add(t, s, "Mira keeps bees.", "Mira sings in a choir.")
	for _, c := range []struct{ body, want string }{
		{`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2,3]}]}`, "vector 1 has 3 values; want 2"},
		{`not json at all`, "not the JSON of an embeddings list"},
		{`{"data":[{"index":0,"embedding":[` + strings.Repeat("1,", 300000) + `1]}]}`, "bytes for 2 texts"},
	} {
		f.SetReply(func(w http.ResponseWriter, _ []string) bool { fmt.Fprint(w, c.body); return true })
		w := startWorker(t, s, f)
		deadline := time.Now().Add(20 * time.Second)
		for {
			if err := w.Stats().LastError; err != nil && strings.Contains(err.Error(), c.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("want an error saying %q, last %v", c.want, w.Stats().LastError)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if todo, _, err := s.Unembedded(ctx, "fake", 0, 10); err != nil || len(todo) != 2 {
			t.Fatalf("after %q: %d memories queued, %v", c.want, len(todo), err)
		}
	}
	f.SetReply(nil)
	storetest.WaitEmbedded(t, s, "fake")
}
