package prompt

import (
	"strings"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/prompt/channels"
	"github.com/loomctx/loom/workspace"
)

// channelWrapper is the section of rules for the channel the agent answers
// on: what formatting it supports and how to pace a reply.
func (st *state) channelWrapper() md.Node {
	name := st.opts.Channel
	if name == "" || st.disabled("channel") {
		return nil
	}
	c, ok := channels.Get(name)
	if !ok {
		st.diags.Add(workspace.Warning, "", 0, "prompt.unknown-channel", "no formatting rules for channel %q (known: %s)", name, strings.Join(channels.Names(), ", "))
		return nil
	}
	return md.Named("channel", md.Raw(strings.TrimRight(c.Body, "\n"))).From("builtin:channels/" + c.Name + ".md")
}

func (st *state) chatLink() md.Node {
	if st.opts.ChatURL == "" || st.disabled("chat_link") {
		return nil
	}
	return md.Named("chat_link", md.Text(strings.TrimRight(channels.ChatLink(st.opts.ChatURL), "\n")))
}

// forkContext quotes the passage a forked chat is about, "> " on every line.
func (st *state) forkContext() md.Node {
	f := st.opts.Fork
	if f == nil || strings.TrimSpace(f.Selection) == "" || st.disabled("fork") {
		return nil
	}
	return md.Named("fork",
		md.Text(channels.ForkIntro(f.Title, f.Author)),
		md.Quote(md.Text(strings.TrimRight(f.Selection, "\n"))),
	)
}
