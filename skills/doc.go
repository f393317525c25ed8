// Package skills finds, parses and lists an agent's skills: folders holding
// a SKILL.md whose YAML front matter names and describes the skill.
//
// A [Loader] reads the skills of one workspace (skills/*/SKILL.md, and the
// flat folder), then of the extra folders its [Options] name, then the
// built-in skills embedded in the binary; of skills sharing a name the first
// found wins and the others are marked shadowed in the [Set] it returns. Each file is read through the workspace's door,
// parsed once and kept by its *workspace.File, so a reload after one edit
// parses one file. Front matter that is not valid, a name that does not
// match its folder, an unmet requirement (a command missing from PATH, an
// environment variable unset) each leave a [Skill] with a status and a
// diagnostic naming the file (and the line, for front matter), never a
// failed load.
//
// A [Watcher] reloads the set when a skills folder changes. [Set.Active]
// gives the prompt's catalogue of available skills as an md.Node, in the
// wording of the files under text/.
package skills
