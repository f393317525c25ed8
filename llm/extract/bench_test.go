package extract_test

import (
	"testing"

	"github.com/loomctx/loom/llm/extract"
)

func BenchmarkParse(b *testing.B) {
	reply := "Here you go:\n```json\n{\"user_instructions\":[{\"content\":\"Always answer in English.\",\"supersedes_id\":\"m2\"}],\"user_profile\":[{\"content\":\"The user is Ana.\",\"supersedes_id\":null}]}\n```"
	for b.Loop() {
		if _, err := extract.Parse(reply); err != nil {
			b.Fatal(err)
		}
	}
}
