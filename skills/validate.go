package skills

import (
	"unicode/utf8"

	"github.com/loomctx/loom/workspace"
)

// Limits from the Agent Skills specification.
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500
)

// specName reports whether name keeps the spec's name rule, the regular
// expression ^[a-z0-9]+(-[a-z0-9]+)*$: lowercase letters and digits, with
// single hyphens between them. It is checked by hand, once per skill of a
// cold load; TestSpecNameIsTheSpecPattern holds it to the expression.
func specName(name string) bool {
	if name == "" || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && name[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// validate checks fm against the Agent Skills rules. want is the name the
// skill's folder (or flat file) gives it. Every problem is a warning: the
// skill still loads under want.
func validate(path, want string, fm *Frontmatter, diags *workspace.Diagnostics) {
	name := fm.Name
	line := fm.Line("name")
	_, present := fm.lines["name"]
	switch n := utf8.RuneCountInString(name); {
	case !present:
		diags.Add(workspace.Warning, path, 1, "skill.name", "name is missing; using %q from the file's place", want)
	case n == 0:
		diags.Add(workspace.Warning, path, line, "skill.name", "name is empty; using %q from the file's place", want)
	default:
		if n > MaxNameLen {
			diags.Add(workspace.Warning, path, line, "skill.name", "name is %d characters; the limit is %d", n, MaxNameLen)
		}
		if !specName(name) {
			diags.Add(workspace.Warning, path, line, "skill.name", "name %q should be lowercase a-z, 0-9 and single hyphens, not starting or ending with one", name)
		}
		if name != want {
			diags.Add(workspace.Warning, path, line, "skill.name", "name %q does not match %q, the name its place gives it; listed as %q", name, want, want)
		}
	}
	switch n := utf8.RuneCountInString(fm.Description); {
	case n == 0:
		l := fm.Line("description")
		if l == 0 {
			l = 1
		}
		diags.Add(workspace.Warning, path, l, "skill.description", "description is missing or empty; the model cannot tell when to use this skill")
	case n > MaxDescriptionLen:
		diags.Add(workspace.Warning, path, fm.Line("description"), "skill.description", "description is %d characters; the limit is %d", n, MaxDescriptionLen)
	}
	if n := utf8.RuneCountInString(fm.Compatibility); n > MaxCompatibilityLen {
		diags.Add(workspace.Warning, path, fm.Line("compatibility"), "skill.compatibility", "compatibility is %d characters; the limit is %d", n, MaxCompatibilityLen)
	}
}
