package prompt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
)

// Class: control characters. A memory holding an escape sequence, a bell
// or a carriage return (model output is untrusted) reaches the prompt
// without them; tabs and newlines stay.
func TestPromptHasNoControlCharacters(t *testing.T) {
	dir := write(t, map[string]string{"RULES.md": "x\n"})
	store, err := memory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Add(context.Background(), memory.NewMemory{Category: "global_rule", Content: "answer \x1b[31min red\x1b[0m\a and\rover"}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	res := render(t, dir, prompt.Options{})
	for _, c := range res.Prompt {
		if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
			t.Fatalf("control character %q in the prompt", c)
		}
	}
	if !strings.Contains(res.Prompt, "answer [31min red[0m and over") {
		t.Errorf("the memory is missing or mangled:\n%s", res.Prompt)
	}
}
