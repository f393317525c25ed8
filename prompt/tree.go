package prompt

import (
	"github.com/loomctx/loom/md"
)

// tree assembles the prompt: the preset's sections, the channel and fork
// wrappers around them, and the workspace's override around all that.
func (st *state) tree() md.Node {
	if st.opts.Subagent {
		return st.subagent()
	}
	var sections []md.Node
	if st.preset == Analyst {
		sections = st.analystSections()
	} else {
		sections = st.assistantSections()
	}
	sep := partSep
	if st.preset == Analyst {
		sep = "\n\n"
	}
	parts := []md.Node{
		md.Group(sections),
		st.channelWrapper(),
		st.chatLink(),
		st.forkContext(),
	}
	def := md.Node(&md.Block{Sep: sep, Children: parts})
	if f := st.findOverride(); f != nil {
		return st.applyOverride(f, def, namedSections(parts))
	}
	return def
}

// subagent is the smaller prompt for a subagent: a header, the workspace, a
// focus instruction and the skills summary; no bootstrap files, no memory.
func (st *state) subagent() md.Node {
	var summary md.Node
	if st.skills != nil && !st.disabled("skills") {
		summary = st.skills.Summary(skillsOpts(2))
	}
	return md.Doc(
		md.Named("subagent", wording("subagent", nil)),
		md.Named("skills", summary),
	)
}
