package skills

import "embed"

// builtinFS holds loom's own skills, builtin/<name>/SKILL.md. They have no
// file on disk, so the prompt shows them at the stable pseudo-path
// builtin/<name>/SKILL.md; a file-reading tool serves them through
// [Set.ByLocation], and `loom skills show NAME` prints them.
//
//go:embed builtin
var builtinFS embed.FS
