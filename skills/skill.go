package skills

import (
	"strings"

	"github.com/loomctx/loom/workspace"
)

// Source says where a skill was found.
type Source string

const (
	// SourceWorkspace is the workspace's own skills/ or agent/skills/ folder.
	SourceWorkspace Source = "workspace"
	// SourceExtra is a folder named in loom.yaml under skills.paths.
	SourceExtra Source = "extra"
	// SourceBuiltin is a skill embedded in the loom binary.
	SourceBuiltin Source = "builtin"
)

// Status sums up a skill for listings.
type Status string

const (
	StatusOK       Status = "ok"       // loaded, nothing to say
	StatusWarning  Status = "warning"  // loaded, with warnings
	StatusBroken   Status = "broken"   // could not be read or parsed; not in the prompt
	StatusShadowed Status = "shadowed" // another skill of the same name wins
)

// Skill is one skill file as loaded: its frontmatter, its body and what loom
// found out about it.
type Skill struct {
	// Name is the skill's identity: its folder's name, or for a flat
	// agent/skills/*.md file its frontmatter name, as in nao (the file name
	// without ".md" when the frontmatter has none). A folder skill's
	// frontmatter name is checked against the folder but never replaces it,
	// so such a skill is always found where its name says.
	Name   string `json:"name"`
	Source Source `json:"source"`
	// Path names the file in diagnostics: workspace-relative for workspace
	// skills, absolute for an extra folder outside the workspace, and
	// builtin/<name>/SKILL.md for a built-in skill.
	Path string `json:"path"`
	// Location is the path shown to the model. It equals Path, except that
	// workspace skills are absolute when Options.AbsolutePaths is set, and
	// that a built-in skill is shown by the absolute path it was written to
	// in loom's cache folder, <cache>/builtin/<hash>/<name>/SKILL.md
	// (never inside the workspace).
	Location string `json:"location"`
	// Inline is set for a built-in skill that has no file the agent could
	// read (the workspace is not a folder on disk, or the cache folder
	// cannot be written):
	// the prompt then carries its text.
	Inline      bool        `json:"inline,omitempty"`
	Frontmatter Frontmatter `json:"frontmatter"`
	// Body is the file after the frontmatter, trimmed.
	Body      string   `json:"-"`
	Available bool     `json:"available"`
	Missing   []string `json:"missing,omitempty"` // "CLI: tmux", "ENV: API_KEY", "OS: darwin or linux"
	Status    Status   `json:"status"`
	// ShadowedBy is the Path of the skill that wins over this one.
	ShadowedBy  string                `json:"shadowed_by,omitempty"`
	Diagnostics workspace.Diagnostics `json:"diagnostics"`

	rank int    // precedence: lower wins
	raw  string // the file as read, to recognise untouched starter templates
	// untouched is set, on a workspace skill as loaded, when raw is still
	// loom's starter template (starter.IsUntouched).
	untouched bool
	// final is, on a skill as loaded (never one in a Set), the copy the
	// last Set showed; only its Loader touches it, under its lock.
	final *Skill
}

// Description is the frontmatter description.
func (s *Skill) Description() string { return s.Frontmatter.Description }

// Always reports whether the skill's body belongs in every prompt.
func (s *Skill) Always() bool { return s.Frontmatter.Always }

// usable reports whether the skill may appear in a prompt at all.
func (s *Skill) usable() bool { return s.Status != StatusBroken && s.Status != StatusShadowed }

// MissingText joins Missing the way the prompt shows it: "CLI: x, ENV: Y".
func (s *Skill) MissingText() string {
	return strings.Join(s.Missing, ", ")
}
