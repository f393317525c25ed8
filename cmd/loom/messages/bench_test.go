package messages

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// BenchmarkTurnLarge builds a whole turn — system prompt, 200 history
// messages, the new message with 2 images — on the shared generator's large
// workspace, warm: the system prompt comes from the builder's cache and the
// prefix's token count from the counter's.
func BenchmarkTurnLarge(b *testing.B) {
	gen := "../../../../shared/bench/make-workspace"
	if _, err := os.Stat(gen); err != nil {
		b.Skip("the shared benchmark generator is not beside this checkout")
	}
	dir := filepath.Join(b.TempDir(), "ws")
	if out, err := exec.Command("python3", gen, "large", dir).CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := ws.Watch(); err != nil { // a long-running agent watches its workspace
		b.Fatal(err)
	}
	defer ws.Close()
	builder := prompt.New(ws)
	defer builder.Close()
	var history []messages.Message
	for i := range 100 {
		history = append(history,
			messages.Message{Role: messages.RoleUser, Content: messages.TextContent(fmt.Sprintf("Question %d: what changed in the orders table last week, and why?", i))},
			messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent(fmt.Sprintf("Answer %d: three columns were added to orders; the nightly load now fills them.", i))})
	}
	var media []string
	for i := range 2 {
		var buf bytes.Buffer
		png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 64, 64)))
		p := filepath.Join(b.TempDir(), fmt.Sprintf("img%d.png", i))
		os.WriteFile(p, buf.Bytes(), 0o644)
		media = append(media, p)
	}
	counter, _ := tokens.Get(tokens.Default)
	turn := func() {
		res, err := builder.Render(context.Background(), prompt.Options{Preset: prompt.Assistant})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := messages.Build(messages.Turn{System: res.Prompt, History: history, Message: "And this week?", Media: media},
			messages.Options{Counter: counter}); err != nil {
			b.Fatal(err)
		}
	}
	turn() // warm the caches
	b.ReportAllocs()
	for b.Loop() {
		turn()
	}
}
