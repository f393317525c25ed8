package skills

import "embed"

// builtinFS holds loom's own skills, builtin/<name>/SKILL.md. A load writes
// each to loom's cache folder, outside the workspace (see [CacheDir]), and
// the prompt shows that absolute path; [Set.ByLocation] finds a skill by
// it, and `loom skills show NAME` prints them.
//
//go:embed builtin
var builtinFS embed.FS
