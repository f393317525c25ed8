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

// Options are the caller's text, and lose their control characters too.
func TestOptionsLoseControlCharacters(t *testing.T) {
	dir := write(t, map[string]string{"AGENTS.md": "x\n"})
	res := render(t, dir, prompt.Options{
		ChatURL: "https://chat.example/\x1b[2Jc/1",
		Fork:    &prompt.Fork{Title: "T\x07itle", Author: "A\x00", Selection: "line one\x1b\nline two"},
		GOOS:    "linux\x7f",
	})
	for _, c := range res.Prompt {
		if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
			t.Fatalf("control character %q in the prompt:\n%s", c, res.Prompt)
		}
	}
	if !strings.Contains(res.Prompt, "line two") || !strings.Contains(res.Prompt, "chat.example") {
		t.Errorf("the options' text is missing:\n%s", res.Prompt)
	}
}
