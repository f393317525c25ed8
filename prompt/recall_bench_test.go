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

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// BenchmarkRecallTurn is a warm turn at 10,000 memories, watched: the
// render (reused) and the message build, with memory.retrieval: relevant
// and its recall ("recall"), beside the same turn of a workspace with the
// same memories and retrieval: priority ("priority") and the relevant
// workspace's turn without its recall ("plain"), in one run. Each reports
// its median as p50-ns/op.
func BenchmarkRecallTurn(b *testing.B) {
	dir, prioDir := b.TempDir(), b.TempDir()
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
	if err := os.MkdirAll(filepath.Dir(memory.DBPath(prioDir)), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(memory.DBPath(prioDir), db, 0o600); err != nil {
		b.Fatal(err)
	}
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
	bl, prio := builder(dir), builder(prioDir)
	counter, err := tokens.Get(tokens.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	opts := prompt.Options{User: "ana", GOOS: "linux", GOARCH: "amd64"}
	msgs := []string{"Where does my sister live, and which city is her office in?", "Remind me about the dentist and the piano lessons.", "What was the marathon budget?"}
	history := []messages.Message{{Role: messages.RoleUser, Content: messages.TextContent("How was the weekend?")}, {Role: messages.RoleAssistant, Content: messages.TextContent("Quiet, thanks.")}}
	turn := func(i int, bl *prompt.Builder, recall bool) {
		res, err := bl.Render(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		t := messages.Turn{System: res.Prompt, History: history, Message: msgs[i%len(msgs)], Runtime: messages.Runtime{Now: t0}}
		if recall {
			t.Recall = bl.Recall(ctx, res, t.Message, messages.PreviousTurn(history))
			if t.Recall == nil || len(t.Recall.Memories) == 0 || t.Recall.Fallback != "" {
				b.Fatalf("recall: %+v", t.Recall)
			}
		}
		if _, err := messages.Build(t, messages.Options{Counter: counter}); err != nil {
			b.Fatal(err)
		}
	}
	turn(0, bl, true)
	turn(0, prio, false)
	for _, bl := range []*prompt.Builder{bl, prio} {
		if res, err := bl.Render(ctx, opts); err != nil || !strings.Contains(res.Prompt, "Ana mentioned") {
			b.Fatalf("no memory in the system prompt (%v)", err)
		}
	}
	for _, v := range []struct {
		name   string
		bl     *prompt.Builder
		recall bool
	}{{"priority", prio, false}, {"plain", bl, false}, {"recall", bl, true}} {
		b.Run(v.name, func(b *testing.B) {
			i := 0
			var times []time.Duration
			for b.Loop() {
				t0 := time.Now()
				turn(i, v.bl, v.recall)
				times = append(times, time.Since(t0))
				i++
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns/op")
		})
	}
}
