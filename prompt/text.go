package prompt

import (
	"embed"
	"strings"
	"sync"

	"github.com/loomctx/loom/internal/template"
	"github.com/loomctx/loom/md"
)

//go:embed text/*.md
var textFS embed.FS

// texts holds loom's own prompt wording, parsed on first use (not at start-up,
// which every command pays for). The files are part of the binary, so a parse
// error is a programmer's mistake that a test catches.
var texts = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Option("missingkey=error").ParseFS(textFS, "text/*.md"))
})

// wording renders one of loom's own text files. Its output is loom's text, so
// it goes into the tree as md.Raw; the values put into it are escaped by
// nothing, so only loom's own values (names, dates) may go in.
func wording(name string, data any) md.Node {
	var b strings.Builder
	if err := texts().ExecuteTemplate(&b, name+".md", data); err != nil {
		panic("prompt: text/" + name + ".md: " + err.Error())
	}
	return md.Raw(strings.TrimRight(b.String(), "\n"))
}
