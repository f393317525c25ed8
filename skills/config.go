package skills

import (
	"github.com/loomctx/loom/config"
)

// FromConfig returns the loader and watcher options loom.yaml's skills
// section asks for. Its paths count as the workspace's choice
// ([Options.FromWorkspace]): one outside the workspace needs the
// operator's leave. An explicit `debounce: 0` means "reload at once".
func FromConfig(c *config.Config) (Options, WatchOptions) {
	o := Options{Paths: append([]string(nil), c.Skills.Paths...), FromWorkspace: true, AbsolutePaths: c.Skills.UsesAbsolutePaths(), NoBuiltins: !c.Skills.UsesBuiltins()}
	w := WatchOptions{Debounce: c.Skills.Debounce.Std()}
	if w.Debounce == 0 {
		w.Debounce = -1
	}
	return o, w
}
