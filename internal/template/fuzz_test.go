package template_test

import (
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/template"
)

// FuzzParse feeds any text to the parser and runs what parses: an error is
// fine, a panic or a hang is not.
func FuzzParse(f *testing.F) {
	for _, c := range cases {
		f.Add(c)
	}
	f.Add("{{define \"x\"}}{{template \"x\" .}}{{end}}{{template \"x\" .}}")
	f.Add("{{-}}{{- -}}{{/*")
	f.Fuzz(func(t *testing.T, src string) {
		for _, html := range []bool{false, true} {
			tm := template.New("f")
			if html {
				tm = template.NewHTML("f")
			}
			tm, err := tm.Funcs(funcs()).Parse(src)
			if err != nil {
				continue
			}
			var b strings.Builder
			_ = tm.Execute(&b, sample())
		}
	})
}
