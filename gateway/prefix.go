package gateway

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/server"
)

// The system prompt is the same long text request after request (some
// 100 KB on a large workspace), while the rest of a request is short. What
// messages.Build and the encoders do with the system prompt — put it
// together with the client's, escape it as JSON, hash it and its sections
// for the cache report, count its tokens — is done once per distinct
// prompt and kept in a small ring; each request then pays only for its own
// messages. messages.Build runs with an empty system prompt, and its report
// is completed from the kept part (TestPrefixReportMatchesBuild holds it
// to what messages.Build reports for the whole turn).

// sysEntry is one system prompt as the gateway sends it.
type sysEntry struct {
	// the key: the render, and what the client's system message made of it
	res       *prompt.Result
	prompt    string
	clientSys string
	mode      string

	system   string
	sections []messages.Section
	openai   []byte // the system message in OpenAI form
	state    []byte // sha256 state after the system message's JSONL line
	hashes   []messages.SectionHash
	sha      string
	tokens   int
	withToks bool
}

const sysRing = 8

// samePrompt compares two renders' prompts. Go's string comparison returns
// early when both share their bytes, so a cached prompt costs no scan.
func samePrompt(a, b string) bool {
	return a == b
}

// systemFor returns the system prompt entry for this render and client
// system message, from the ring or made now.
func (g *Gateway) systemFor(res *prompt.Result, clientSys, mode string, counter messages.Counter) (*sysEntry, error) {
	match := func(e *sysEntry, content bool) bool {
		return e != nil && e.clientSys == clientSys && e.mode == mode && e.withToks == (counter != nil) &&
			(e.res == res || content && samePrompt(e.prompt, res.Prompt))
	}
	g.mu.Lock()
	// The same render first, then an equal prompt: comparing a 100 KB
	// prompt with an older one of the same length is not free.
	for _, content := range []bool{false, true} {
		for _, e := range g.sys {
			if match(e, content) {
				if content {
					e.res = res // the next request likely brings this render again
				}
				g.mu.Unlock()
				return e, nil
			}
		}
	}
	g.mu.Unlock()
	e, err := makeSystem(res, clientSys, mode, counter)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.sys[g.sysNext] = e
	g.sysNext = (g.sysNext + 1) % sysRing
	g.mu.Unlock()
	return e, nil
}

func makeSystem(res *prompt.Result, clientSys, mode string, counter messages.Counter) (*sysEntry, error) {
	e := &sysEntry{res: res, prompt: res.Prompt, clientSys: clientSys, mode: mode, withToks: counter != nil}
	system, sections := res.Prompt, server.Sections(res)
	switch {
	case clientSys == "" || mode == config.ClientSystemIgnore:
	case mode == config.ClientSystemReplace:
		// The client's prompt wins; loom adds only the memory sections.
		var b strings.Builder
		b.WriteString(clientSys)
		sections = []messages.Section{{Name: "client_system", Start: 0, End: len(clientSys)}}
		for _, s := range res.Report.Sections() {
			if strings.Contains(s.Name, "memory") && s.Start >= 0 && s.End > s.Start && s.End <= len(res.Prompt) {
				b.WriteString("\n\n")
				start := b.Len()
				b.WriteString(strings.TrimSpace(res.Prompt[s.Start:s.End]))
				sections = append(sections, messages.Section{Name: s.Name, Start: start, End: b.Len()})
			}
		}
		system = b.String()
	default: // append
		const head = "\n\n## Client instructions\n\n"
		system = res.Prompt + head + clientSys
		sections = append(slices.Clip(sections), messages.Section{Name: "client_system", Start: len(res.Prompt) + len(head), End: len(system)})
	}
	e.system, e.sections = system, sections

	msg := messages.Message{Role: messages.RoleSystem, Content: messages.TextContent(system)}
	wire, err := messages.OpenAIWith([]messages.Message{msg}, messages.OpenAIOptions{})
	if err != nil {
		return nil, err
	}
	if e.openai, err = json.Marshal(wire[0]); err != nil {
		return nil, err
	}
	// The report's figures, as messages.Build computes them.
	sorted := slices.Clone(sections)
	slices.SortStableFunc(sorted, func(a, b messages.Section) int { return a.Start - b.Start })
	e.hashes = make([]messages.SectionHash, 0, len(sorted))
	for _, s := range sorted {
		if s.Start < 0 || s.End < s.Start || s.End > len(system) {
			return nil, fmt.Errorf("system section %q: range [%d,%d) is outside the %d-byte prompt", s.Name, s.Start, s.End, len(system))
		}
		e.hashes = append(e.hashes, messages.SectionHash{Name: s.Name, Start: s.Start, End: s.End, SHA256: hashString(system[s.Start:s.End])})
	}
	line, err := messages.AppendJSONL(nil, msg)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write(line)
	if e.state, err = h.(encoding.BinaryMarshaler).MarshalBinary(); err != nil {
		return nil, err
	}
	e.sha = hashString(system)
	if counter != nil {
		e.tokens = counter.Count(system)
	}
	return e, nil
}

// cacheAt is where an Anthropic upstream's cache breakpoint goes in the
// system text: after loom's prompt when the client's system text is
// appended to it, so that a change in the client's keeps loom's cached
// (llm.Request.SystemCacheAt); 0 is after the whole system text.
func (e *sysEntry) cacheAt() int {
	if e == nil || e.clientSys == "" || e.mode != config.ClientSystemAppend && e.mode != "" {
		return 0
	}
	return len(e.prompt)
}

func hashString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// completeReport fills in the system prompt's part of a report that
// messages.Build made with an empty system prompt: the section hashes, the
// prefix hash (the kept hash state carried on over the stable history's
// lines), the system figures and the small-prefix warning.
func (e *sysEntry) completeReport(r *messages.Report, history []messages.Message, opts messages.Options) error {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(e.state); err != nil {
		return err
	}
	var line []byte
	var err error
	for _, m := range history[:r.Prefix.Messages] {
		// The prefix hashes the chat form: no timestamp, no extra keys.
		m = m.WithExtra(nil)
		m.Time = time.Time{}
		if line, err = messages.AppendJSONL(line[:0], m); err != nil {
			return err
		}
		h.Write(line)
	}
	r.Sections = e.hashes
	r.Prefix.SHA256 = hex.EncodeToString(h.Sum(nil))
	r.Prefix.SystemSHA256 = e.sha
	if opts.Counter != nil {
		r.Prefix.SystemTokens = e.tokens
		r.Prefix.Tokens += e.tokens
		min := opts.MinCacheTokens
		if min <= 0 {
			min = messages.DefaultMinCacheTokens
		}
		// Build warned about the prefix without the system prompt.
		r.Warnings = slices.DeleteFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, "stable prefix is ") })
		if r.Prefix.Tokens < min {
			r.Warnings = append(r.Warnings, fmt.Sprintf("stable prefix is %d tokens, below the %d-token minimum a provider caches; it will not be cached", r.Prefix.Tokens, min))
		}
	}
	return nil
}
