package memory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

var (
	genOpeners = []string{"Always", "Never", "Respond in French to", "Use", "Do not", "Prefer", "From now on,", "The user", "The user's team", "The user's manager"}
	genWords   = strings.Fields(`revenue table report metric dashboard query schema customer order churn cohort region
		forecast budget invoice warehouse pipeline latency weekly monthly quarterly analyst finance marketing sales
		snake_case camelCase SQL BigQuery Snowflake PostgreSQL JSON CSV p95 Q3 FY2025 v2.1 e-mail follow-up
		café naïve résumé Zürich 東京 データ 🚀 señor Ελλάδα`)
	genTails = []string{".", ".", ".", "!", "?", ",", ";", ":", ")", "…"}
)

// genMemories makes n memories like an extraction would: 20 to 400
// characters, many short and some long, mostly English with some accents,
// CJK, emoji, numbers and punctuation. The same seed gives the same list.
func genMemories(n int, seed uint64) []Memory {
	rng := rand.New(rand.NewPCG(seed, 1))
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Memory, n)
	for i := range out {
		t = t.Add(time.Duration(60+rng.IntN(8*3600)) * time.Second)
		target := 20 + rng.IntN(60)
		switch r := rng.IntN(100); {
		case r >= 75:
			target = 200 + rng.IntN(200)
		case r >= 35:
			target = 80 + rng.IntN(120)
		}
		var b strings.Builder
		b.WriteString(genOpeners[rng.IntN(len(genOpeners))])
		for b.Len() < target {
			b.WriteByte(' ')
			switch rng.IntN(12) {
			case 0:
				fmt.Fprintf(&b, "%d", rng.IntN(100000))
			case 1:
				b.WriteString("(" + genWords[rng.IntN(len(genWords))] + ")")
			default:
				b.WriteString(genWords[rng.IntN(len(genWords))])
			}
			if rng.IntN(6) == 0 {
				b.WriteString(genTails[rng.IntN(len(genTails))])
			}
		}
		cat := "personal_fact"
		if rng.IntN(10) < 4 {
			cat = "global_rule"
		}
		content, err := Normalize(b.String())
		if err != nil {
			panic(err)
		}
		out[i] = Memory{ID: fmt.Sprintf("m%06d", i), Category: cat, Content: content, CreatedAt: t}
	}
	return out
}
