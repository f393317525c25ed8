package prompt_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/embedding/embeddingtest"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/storetest"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// BenchmarkRecallTurn is a warm turn at 10,000 memories, watched: the
// render (reused) and the message build, with memory.retrieval: relevant
// and its recall ("recall"), beside the same turn of a workspace with the
// same memories and retrieval: priority ("priority") and the relevant
// workspace's turn without its recall ("plain"), in one run; and the
// relevant workspace with memory.embeddings on a fake endpoint on
// loopback (vectors of 384 values, every memory's written beforehand):
// "embeddings-cached" repeats three messages, so their query vectors come
// from the cache and the turn adds the search by meaning and the fusion;
// "embeddings-call" makes every message new, which adds one call to the
// endpoint. Each reports its median as p50-ns/op.
func BenchmarkRecallTurn(b *testing.B) {
	dir, prioDir, embDir := b.TempDir(), b.TempDir(), b.TempDir()
	fake := embeddingtest.New(b)
	fake.Dims = 384
	if err := os.WriteFile(filepath.Join(embDir, "loom.yaml"), []byte("memory:\n  retrieval: relevant\n  embeddings:\n    base_url: "+fake.BaseURL()+"\n    model: fake\n    dimensions: 384\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte("memory:\n  retrieval: relevant\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prioDir, "loom.yaml"), []byte("memory:\n  retrieval: priority\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := memory.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	// A vocabulary of 20,000 words drawn with a Zipf law (the commonest
	// in about 1 memory in 10), and the queries' words among them.
	words := strings.Fields(`sister city train office garden report budget dentist school piano harbour kitchen
		invoice bicycle climbing pottery wedding flight allergy recipe marathon novel guitar laptop weekend`)
	for i := len(words); i < 20000; i++ {
		words = append(words, fmt.Sprintf("w%dx", i))
	}
	rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	zipf := rand.NewZipf(rng, 1.1, 100, uint64(len(words)-1))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := make([]memory.Memory, 10000)
	for i := range ms {
		var w []string
		for range 6 + rng.IntN(12) {
			w = append(w, words[zipf.Uint64()])
		}
		ms[i] = memory.Memory{ID: fmt.Sprintf("m%05d", i), Category: "personal_fact", User: "ana",
			Content: "Ana mentioned " + strings.Join(w, " ") + fmt.Sprintf(" on day %d.", i), CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
	}
	if err := s.Import(context.Background(), ms); err != nil {
		b.Fatal(err)
	}
	s.Close()
	db, err := os.ReadFile(memory.DBPath(dir))
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{prioDir, embDir} {
		if err := os.MkdirAll(filepath.Dir(memory.DBPath(d)), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(memory.DBPath(d), db, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	embStore, err := memory.Open(embDir)
	if err != nil {
		b.Fatal(err)
	}
	storetest.EmbedAll(b, embStore, "fake@384", fake.Vector)
	embStore.Close()
	builder := func(dir string) *prompt.Builder {
		ws, err := workspace.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ws.Close() })
		if err := ws.Watch(); err != nil {
			b.Fatal(err)
		}
		bl := prompt.New(ws)
		b.Cleanup(func() { bl.Close() })
		return bl
	}
	bl, prio, emb := builder(dir), builder(prioDir), builder(embDir)
	counter, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	opts := prompt.Options{User: "ana", GOOS: "linux", GOARCH: "amd64"}
	msgs := []string{"Where does my sister live, and which city is her office in?", "Remind me about the dentist and the piano lessons.", "What was the marathon budget?"}
	history := []messages.Message{{Role: messages.RoleUser, Content: messages.TextContent("How was the weekend?")}, {Role: messages.RoleAssistant, Content: messages.TextContent("Quiet, thanks.")}}
	turn := func(i int, bl *prompt.Builder, recall, newMessage bool) {
		res, err := bl.Render(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		t := messages.Turn{System: res.Prompt, History: history, Message: msgs[i%len(msgs)], Runtime: messages.Runtime{Now: t0}}
		if newMessage {
			t.Message += fmt.Sprintf(" (%d)", i)
		}
		if recall {
			t.Recall = bl.Recall(ctx, res, t.Message, messages.PreviousTurn(history))
			if t.Recall == nil || len(t.Recall.Memories) == 0 || t.Recall.Fallback != "" {
				b.Fatalf("recall: %+v", t.Recall)
			}
			if bl == emb && t.Recall.Ranking != memory.RankingFused {
				b.Fatalf("recall ranking: %q", t.Recall.Ranking)
			}
		}
		if _, err := messages.Build(t, messages.Options{Counter: counter}); err != nil {
			b.Fatal(err)
		}
	}
	turn(0, bl, true, false)
	turn(0, prio, false, false)
	turn(0, emb, true, false)
	for _, bl := range []*prompt.Builder{bl, prio} {
		if res, err := bl.Render(ctx, opts); err != nil || !strings.Contains(res.Prompt, "Ana mentioned") {
			b.Fatalf("no memory in the system prompt (%v)", err)
		}
	}
	for _, v := range []struct {
		name        string
		bl          *prompt.Builder
		recall, new bool
	}{{"priority", prio, false, false}, {"plain", bl, false, false}, {"recall", bl, true, false},
		{"embeddings-cached", emb, true, false}, {"embeddings-call", emb, true, true}} {
		b.Run(v.name, func(b *testing.B) {
			i := 0
			var times []time.Duration
			for b.Loop() {
				t0 := time.Now()
				turn(i, v.bl, v.recall, v.new)
				times = append(times, time.Since(t0))
				i++
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns/op")
		})
	}
}
