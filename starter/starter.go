// Package starter holds the files `loom init` writes into a new workspace, one
// set per preset, and recognises them later: a bootstrap file still equal to
// its starter template says nothing about the user, so the prompt leaves it out.
package starter

import (
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/loomctx/loom/internal/embedded"
)

//go:embed all:templates
var templates embed.FS

// Presets returns the names of the presets that have starter files, sorted.
func Presets() []string { return embedded.Names(templates, "templates") }

// Files returns the starter files of preset, rooted at the workspace root:
// "AGENTS.md", "memory/MEMORY.md" and so on.
func Files(preset string) (fs.FS, error) {
	return embedded.Sub(templates, "templates", preset, "preset")
}

// untouched maps a slash-relative path to the trimmed texts of the starter
// templates at that path, across every preset.
var untouched = sync.OnceValue(func() map[string][]string {
	m := make(map[string][]string)
	for _, preset := range Presets() {
		fsys, _ := Files(preset)
		fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			t := trim(string(b))
			if !slices.Contains(m[p], t) {
				m[p] = append(m[p], t)
			}
			return nil
		})
	}
	return m
})

// IsUntouched reports whether text, the content of the workspace file at the
// slash-relative path rel, is still the starter template for rel of any
// preset. Trailing whitespace and CRLF line ends are ignored, so an editor
// that adds a final newline or saves with CRLF does not count as an edit.
func IsUntouched(rel, text string) bool {
	texts, ok := untouched()[path.Clean(rel)]
	if !ok {
		return false
	}
	return slices.Contains(texts, trim(text))
}

func trim(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.TrimRight(s, " \t\r\n")
}
