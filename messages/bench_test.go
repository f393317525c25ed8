package messages

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkBuild200 builds a turn on 200 history messages with 2 images and
// a given system prompt, counting the prefix's tokens, as an agent does
// each turn once the system prompt is cached.
func BenchmarkBuild200(b *testing.B) {
	dir := b.TempDir()
	imgs := []string{writeFile(b, dir, "a.png", pngBytes(b)), writeFile(b, dir, "b.jpg", jpegBytes(b))}
	system := strings.Repeat("## Section\nThe agent follows these rules carefully and cites files.\n", 400)
	hist := make([]Message, 0, 200)
	for i := range 50 {
		id := fmt.Sprintf("c%d", i)
		hist = append(hist,
			user(fmt.Sprintf("Question %d: what does file %d say about the build?", i, i)),
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/f%d.go"}`, i)}}}},
			result(id, strings.Repeat("package main // line of code\n", 40)),
			assistant(fmt.Sprintf("File %d builds with go build; nothing else is needed.", i)))
	}
	turn := Turn{System: system, History: hist, Message: "And these two screenshots?", Media: imgs, Runtime: Runtime{Now: fixedNow, Channel: "cli"}}
	for _, bc := range []struct {
		name    string
		counter Counter
	}{{"nocount", nil}, {"o200k", newCounter(b)}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Build(turn, Options{Counter: bc.counter}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	res, err := Build(turn, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("openai", func(b *testing.B) {
		for b.Loop() {
			if _, err := res.OpenAI(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("anthropic", func(b *testing.B) {
		for b.Loop() {
			if _, err := res.Anthropic(true, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("clean", func(b *testing.B) {
		for b.Loop() {
			Clean(res.Messages[1:], CleanOptions{})
		}
	})
}
