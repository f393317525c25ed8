package memory

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// zipfText makes memories and queries from a vocabulary of 20,000 made-up
// words drawn with a Zipf law, as the content words of natural text are: a
// few words are in many memories, most words in few. The law's offset (100)
// stands for the most frequent words, which are stop words that a query
// leaves out: the commonest word made is in about 1 memory in 10. The same
// seed gives the same text.
type zipfText struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

func newZipfText(seed uint64) *zipfText {
	rng := rand.New(rand.NewPCG(seed, 7))
	syll := strings.Fields("ka lo mi ra ten su vo ne pa di gor fi ul bre sha tom el ix")
	vocab := make([]string, 20000)
	for i := range vocab {
		var b strings.Builder
		for n := i; ; n /= len(syll) {
			b.WriteString(syll[n%len(syll)])
			if n < len(syll) {
				break
			}
		}
		vocab[i] = b.String()
	}
	return &zipfText{rng: rng, zipf: rand.NewZipf(rng, 1.1, 100, uint64(len(vocab)-1)), vocab: vocab}
}

func (z *zipfText) sentence(words int) string {
	ws := make([]string, words)
	for i := range ws {
		ws[i] = z.vocab[z.zipf.Uint64()]
	}
	return strings.Join(ws, " ") + "."
}

// memories makes n memories of 6 to 30 words, one user's, a minute apart.
func (z *zipfText) memories(n int, user string) []Memory {
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Memory, n)
	for i := range out {
		out[i] = Memory{ID: "z" + strconv.Itoa(i), Category: "personal_fact", User: user,
			Content: z.sentence(6 + z.rng.IntN(25)), CreatedAt: t.Add(time.Duration(i) * time.Minute)}
	}
	return out
}

// BenchmarkSearch ranks one user's memories for a turn's text (a 12-word
// message and a 12-word previous turn, 24 terms) at 10,000 memories, beside
// the floor: reading the same rows by key with a plain SELECT.
func BenchmarkSearch(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchSearch(b, s, 10000)
}

// BenchmarkSearch1M is BenchmarkSearch at 1,000,000 memories. Making them
// takes minutes, so it runs only with LOOM_BENCH_1M=1 and keeps the
// database in the temporary folder for the next run.
func BenchmarkSearch1M(b *testing.B) {
	if os.Getenv("LOOM_BENCH_1M") != "1" {
		b.Skip("set LOOM_BENCH_1M=1 to run (builds a 1M-memory database once in the temporary folder)")
	}
	// "b": built with the index merged after each import (see
	// optimizeAfterImport); an older file is not reused.
	path := filepath.Join(os.TempDir(), fmt.Sprintf("loom-search-1m-v%db.db", SchemaVersion()))
	s, err := OpenSQLite(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchSearch(b, s, 1000000)
}

func benchSearch(b *testing.B, s *SQLite, n int) {
	z := newZipfText(1)
	var have int
	if err := s.db.QueryRow(`SELECT count(*) FROM memories`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have != n {
		if have != 0 {
			b.Fatalf("%s has %d memories, want 0 or %d", s.Path(), have, n)
		}
		for i := 0; i < n; i += 100000 {
			ms := z.memories(min(100000, n-i), "ana")
			for j := range ms {
				ms[j].ID = "z" + strconv.Itoa(i+j)
			}
			if err := s.Import(ctx, ms); err != nil {
				b.Fatal(err)
			}
		}
	}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = z.sentence(12) + " " + z.sentence(12)
	}
	var found [][]Hit
	b.Run(fmt.Sprintf("n=%d/search", n), func(b *testing.B) {
		found = found[:0]
		i := 0
		var p p50
		for b.Loop() {
			t0 := time.Now()
			hits, err := s.Search(ctx, SearchQuery{Text: queries[i%len(queries)], User: "ana", Limit: 20})
			p.add(time.Since(t0))
			if err != nil || len(hits) == 0 {
				b.Fatal(len(hits), err)
			}
			if len(found) < len(queries) {
				found = append(found, hits)
			}
			i++
		}
		p.report(b)
	})
	b.Run(fmt.Sprintf("n=%d/select-floor", n), func(b *testing.B) {
		i := 0
		var p p50
		for b.Loop() {
			t0 := time.Now()
			hits := found[i%len(found)]
			seqs := make([]string, len(hits))
			for j, h := range hits {
				seqs[j] = strconv.FormatInt(h.seq, 10)
			}
			rows, err := s.db.QueryContext(ctx, `SELECT seq, id, category, content, user, chat, created_s, created_ns FROM memories WHERE seq IN (`+strings.Join(seqs, ",")+`)`)
			if err != nil {
				b.Fatal(err)
			}
			k := 0
			for rows.Next() {
				var m Memory
				var seq, sec, nsec int64
				if err := rows.Scan(&seq, &m.ID, &m.Category, &m.Content, &m.User, &m.Chat, &sec, &nsec); err != nil {
					b.Fatal(err)
				}
				k++
			}
			rows.Close()
			p.add(time.Since(t0))
			if k != len(hits) {
				b.Fatal(k, len(hits))
			}
			i++
		}
		p.report(b)
	})
}

// p50 collects the times of a benchmark's operations and reports their
// median as p50-ns/op: the goals are medians, and on a shared machine a
// few slow operations move the mean.
type p50 []time.Duration

func (p *p50) add(d time.Duration) { *p = append(*p, d) }

func (p p50) report(b *testing.B) {
	if len(p) == 0 {
		return
	}
	slices.Sort(p)
	b.ReportMetric(float64(p[len(p)/2].Nanoseconds()), "p50-ns/op")
}

// BenchmarkAddIndexed is BenchmarkAdd into 10,000 memories with the
// full-text index kept, beside the baseline in the same loop: the same
// write into a store whose index triggers are dropped (the write as it was
// before the index). The two take turns going first, so load and order hit both alike; it
// reports each one's median (indexed-p50-ns, plain-p50-ns) and their ratio.
func BenchmarkAddIndexed(b *testing.B) {
	z := newZipfText(2)
	ms := z.memories(10000, "ana")
	open := func(indexed bool) *SQLite {
		s, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if err := s.Import(ctx, ms); err != nil {
			b.Fatal(err)
		}
		if !indexed {
			for _, tr := range []string{"insert", "update", "delete"} {
				if _, err := s.db.Exec(`DROP TRIGGER memories_fts_` + tr); err != nil {
					b.Fatal(err)
				}
			}
		}
		return s
	}
	plain, indexed := open(false), open(true)
	texts := make([]string, 256)
	for i := range texts {
		texts[i] = z.sentence(6 + z.rng.IntN(25))
	}
	var tPlain, tIndexed p50
	i := 0
	for b.Loop() {
		ws := []struct {
			s *SQLite
			t *p50
		}{{plain, &tPlain}, {indexed, &tIndexed}}
		if i%2 == 1 {
			ws[0], ws[1] = ws[1], ws[0]
		}
		for _, w := range ws {
			t0 := time.Now()
			if _, err := w.s.Add(ctx, NewMemory{Category: "personal_fact", User: "ana", Content: texts[i%len(texts)]}); err != nil {
				b.Fatal(err)
			}
			w.t.add(time.Since(t0))
		}
		i++
	}
	slices.Sort(tPlain)
	slices.Sort(tIndexed)
	p, x := tPlain[len(tPlain)/2], tIndexed[len(tIndexed)/2]
	b.ReportMetric(float64(x.Nanoseconds()), "indexed-p50-ns")
	b.ReportMetric(float64(p.Nanoseconds()), "plain-p50-ns")
	b.ReportMetric(float64(x)/float64(p), "ratio")
}
