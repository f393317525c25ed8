package prompt

import (
	"regexp"
	"slices"
	"strings"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/workspace"
)

// PromptsDir holds a workspace's prompt overrides.
const PromptsDir = "agent/prompts"

// placeholder matches {{ default_prompt }}, its alias {{ nao_prompt }}, and
// {{ section:NAME }}, with any whitespace inside the braces. Other {{…}} text
// is left alone, so JSON and templates in an override stay as written.
var placeholder = regexp.MustCompile(`\{\{\s*(default_prompt|nao_prompt|section\s*:\s*([^}\s]*))\s*\}\}`)

var channelName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// findOverride returns the override file for the channel: first
// agent/prompts/<channel>.md, then system.md; with no channel only system.md.
// A blank file falls through to the next; a refused one is reported and falls
// through too.
func (st *state) findOverride() *workspace.File {
	var names []string
	if ch := st.opts.Channel; ch != "" {
		if channelName.MatchString(ch) {
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
	locs := placeholder.FindAllStringSubmatchIndex(text, -1)
	if len(locs) == 0 {
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
	for _, loc := range locs {
		parts = append(parts, md.Text(text[last:loc[0]]))
		if loc[4] < 0 { // default_prompt or nao_prompt
			parts = append(parts, def)
		} else {
			name := text[loc[4]:loc[5]]
			if n, ok := sections[name]; ok {
				parts = append(parts, n)
			} else {
				st.diags.Add(workspace.Warning, f.Path, lineAt(text, loc[0]), "prompt.unknown-section",
					"{{ section:%s }} names no section of the %s prompt (valid: %s)", name, st.preset, sectionNames(sections))
			}
		}
		last = loc[1]
	}
	parts = append(parts, md.Text(text[last:]))
	return md.Named("override", md.Span(parts...)).From(f.Path)
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
