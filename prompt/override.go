package prompt

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/workspace"
)

// PromptsDir holds a workspace's prompt overrides.
const PromptsDir = "agent/prompts"

// placeholder matches {{ default_prompt }}, its alias {{ nao_prompt }}, and
// {{ section:NAME }}, with any whitespace inside the braces. Other {{…}} text
// is left alone, so JSON and templates in an override stay as written.
var placeholder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\{\{\s*(default_prompt|nao_prompt|section\s*:\s*([^}\s]*))\s*\}\}`)
})

var channelName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`) })

// findOverride returns the override file for the channel: first
// agent/prompts/<channel>.md, then system.md; with no channel only system.md.
// A blank file falls through to the next; a refused one is reported and falls
// through too.
func (st *state) findOverride() *workspace.File {
	var names []string
	if ch := st.opts.Channel; ch != "" {
		if channelName().MatchString(ch) {
			names = append(names, ch+".md")
		} else {
			st.diags.Add(workspace.Warning, "", 0, "prompt.channel-name", "channel %q is not a valid name (lowercase letters, digits, - and _); its override is not looked up", ch)
		}
	}
	names = append(names, "system.md")
	for _, n := range names {
		f, ok := st.ws.Read(PromptsDir+"/"+n, &st.diags)
		if ok && strings.TrimSpace(f.Text) != "" {
			return f
		}
	}
	return nil
}

// applyOverride places the default prompt into the override file. Without a
// placeholder the file replaces the prompt, followed by the sections named in
// overrides.keep. The default prompt is inserted as a node, never through a
// string replacement, so "$" in it means nothing special.
func (st *state) applyOverride(f *workspace.File, def md.Node, sections map[string]md.Node) md.Node {
	text := strings.TrimRight(f.Text, "\n")
	locs := placeholder().FindAllStringSubmatchIndex(text, -1)
	if len(locs) == 0 {
		st.nearMisses(f, text)
		var kept []md.Node
		for _, name := range st.cfg.Overrides.Keep {
			if n, ok := sections[name]; ok {
				kept = append(kept, n)
			} else {
				st.diags.Add(workspace.Warning, st.cfg.File, st.cfg.Line("overrides"), "prompt.unknown-section",
					"overrides.keep names %q, which is not a section of the %s prompt (valid: %s)", name, st.preset, sectionNames(sections))
			}
		}
		return md.Doc(md.Named("override", md.Text(text)).From(f.Path), md.Group(kept))
	}
	var parts md.Group
	last := 0
	placed := map[string]bool{}
	for _, loc := range locs {
		parts = append(parts, md.Text(text[last:loc[0]]))
		last = loc[1]
		key, node := "default_prompt", def
		if loc[4] >= 0 {
			name := text[loc[4]:loc[5]]
			n, ok := sections[name]
			if !ok {
				st.diags.Add(workspace.Warning, f.Path, lineAt(text, loc[0]), "prompt.unknown-section",
					"{{ section:%s }} names no section of the %s prompt (valid: %s)", name, st.preset, sectionNames(sections))
				continue
			}
			// A scope takes the separator of the block it sits in; inside
			// the override's text that is none, so it gets the blank lines
			// it has in the default prompt.
			key, node = "section:"+name, md.Doc(n)
		}
		// Each part is placed once: a repeated placeholder would copy the
		// prompt again for every repetition, so a small file could make
		// an unbounded one.
		if placed[key] {
			st.diags.Add(workspace.Warning, f.Path, lineAt(text, loc[0]), "prompt.repeated-placeholder",
				"%s is placed again; each part of the prompt is placed only once, so this one is left empty", strings.TrimSpace(text[loc[0]:loc[1]]))
			continue
		}
		placed[key] = true
		parts = append(parts, node)
	}
	parts = append(parts, md.Text(text[last:]))
	st.nearMisses(f, text)
	return md.Named("override", md.Span(parts...)).From(f.Path)
}

// nearMiss matches any {{ … }} that is not too long, to look for
// placeholders written with the wrong case or spacing.
var nearMiss = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{([^{}\n]{1,80})\}\}`) })

// nearMisses warns about {{ … }} that was probably meant as a placeholder
// but does not match one exactly ({{ NAO_PROMPT }}, {{default prompt}},
// {{ Section:skills }}): without a warning, a file whose only placeholder is
// misspelt silently replaces the whole prompt.
func (st *state) nearMisses(f *workspace.File, text string) {
	for _, loc := range nearMiss().FindAllStringSubmatchIndex(text, -1) {
		whole := text[loc[0]:loc[1]]
		if placeholder().MatchString(whole) {
			continue
		}
		if meant := meantPlaceholder(text[loc[2]:loc[3]]); meant != "" {
			st.diags.Add(workspace.Warning, f.Path, lineAt(text, loc[0]), "prompt.placeholder-typo",
				"%s is not a placeholder, so it is kept as text; did you mean %s?", whole, meant)
		}
	}
}

// meantPlaceholder returns the placeholder inner probably stands for, or "".
func meantPlaceholder(inner string) string {
	norm := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '_', '-':
			return -1
		}
		return unicode.ToLower(r)
	}, inner)
	switch {
	case norm == "defaultprompt" || norm == "default" || norm == "prompt":
		return "{{ default_prompt }}"
	case norm == "naoprompt":
		return "{{ nao_prompt }}"
	case strings.HasPrefix(norm, "section:") || strings.HasPrefix(norm, "sections:"):
		_, name, _ := strings.Cut(strings.TrimSpace(inner), ":")
		return "{{ section:" + strings.ToLower(strings.TrimSpace(name)) + " }}"
	}
	return ""
}

func lineAt(text string, offset int) int { return strings.Count(text[:offset], "\n") + 1 }

func sectionNames(sections map[string]md.Node) string {
	names := make([]string, 0, len(sections))
	for n := range sections {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// namedSections finds the named scopes of the default prompt that an
// override may place: the top-level parts and, inside them, the bootstrap
// files and the tail's parts.
func namedSections(nodes []md.Node) map[string]md.Node {
	out := map[string]md.Node{}
	var walk func(n md.Node, depth int)
	walk = func(n md.Node, depth int) {
		if depth > 3 {
			return
		}
		switch n := n.(type) {
		case md.Group:
			for _, c := range n {
				walk(c, depth)
			}
		case *md.Block:
			if n != nil {
				for _, c := range n.Children {
					walk(c, depth+1)
				}
			}
		case *md.Scope:
			if n == nil {
				return
			}
			if n.Name != "" && !strings.Contains(n.Name, "/") {
				if _, dup := out[n.Name]; !dup {
					out[n.Name] = n
				}
			}
			for _, c := range n.Children {
				walk(c, depth+1)
			}
		}
	}
	for _, n := range nodes {
		walk(n, 0)
	}
	return out
}
