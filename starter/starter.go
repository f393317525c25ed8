// Package starter holds the files `loom init` writes into a new workspace, one
// set per preset, and recognises them later: a bootstrap file still equal to
// its starter template says nothing about the user, so the prompt leaves it out.
package starter

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
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

//go:embed known.txt
var knownText string

type knownTemplate struct{ path, sum, origin string }

// known is known.txt parsed: other agents' onboarding templates.
var known = sync.OnceValue(func() []knownTemplate {
	var out []knownTemplate
	for _, line := range strings.Split(knownText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) == 3 {
			out = append(out, knownTemplate{f[0], f[1], f[2]})
		}
	}
	return out
})

// Template reports whether text, the content of the workspace file at rel,
// is still a template nobody filled in: one of loom's starter files, or an
// onboarding template of another agent listed in known.txt. origin says
// which, for a diagnostic ("loom's starter template", "nanobot's
// onboarding questionnaire (v0.1.4.post4)").
func Template(rel, text string) (origin string, ok bool) {
	rel = path.Clean(rel)
	texts, found := untouched()[rel]
	var t string
	if found {
		t = trim(text)
		if slices.Contains(texts, t) {
			return "loom's starter template", true
		}
	}
	var sum string
	for _, k := range known() {
		if k.path != rel {
			continue
		}
		if !found {
			t, found = trim(text), true
		}
		if sum == "" {
			h := sha256.Sum256([]byte(t))
			sum = hex.EncodeToString(h[:])
		}
		if k.sum == sum {
			return k.origin, true
		}
	}
	return "", false
}

// IsUntouched reports whether text, the content of the workspace file at the
// slash-relative path rel, is still a template for rel: loom's starter file
// of any preset, or another agent's onboarding template (see [Template]). Trailing whitespace and CRLF line ends are ignored, so an editor
// that adds a final newline or saves with CRLF does not count as an edit.
func IsUntouched(rel, text string) bool {
	_, ok := Template(rel, text)
	return ok
}

func trim(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.TrimRight(s, " \t\r\n")
}
