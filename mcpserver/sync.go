package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/skills"
)

// Refresh brings the server's prompt and resource lists up to date with the
// workspace and notifies clients of what changed: prompts/list_changed when
// a skill prompt was added, removed or changed (its text included),
// resources/list_changed when resources came or went, and resources/updated
// to the subscribers of each resource whose contents changed.
//
// While the workspace's door is watching and nothing changed since the last
// call, Refresh reads nothing.
func (s *Server) Refresh(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.synced && s.ws.Watching() && s.ws.Generation() == s.lastGen {
		return nil
	}
	return s.syncLocked(ctx)
}

// changed forces a sync after the server itself changed something the
// watcher does not see (the memory database).
func (s *Server) changed(ctx context.Context) {
	s.memoryChanged()
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if err := s.syncLocked(ctx); err != nil {
		s.log.Warn("refresh failed", "err", err)
	}
}

func (s *Server) syncLocked(ctx context.Context) error {
	gen := s.ws.Generation()
	set, err := s.b().Skills()
	if err != nil {
		return err
	}

	// Prompts: one per usable skill; its fingerprint covers everything
	// prompts/get would return.
	prompts := map[string]string{}
	bySkill := map[string]*skills.Skill{}
	for _, sk := range set.Usable() {
		if sk.Name == SystemPrompt {
			continue
		}
		prompts[sk.Name] = fingerprint(sk.Description(), strconv.FormatBool(sk.Available), sk.MissingText(), sk.Location, sk.Body)
		bySkill[sk.Name] = sk
	}
	var gone []string
	for name := range s.prompts {
		if _, ok := prompts[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.mcp.RemovePrompts(gone...)
		s.note("prompts/list_changed", "")
	}
	changedSkill := map[string]bool{}
	for _, name := range sortedKeys(prompts) {
		if s.prompts[name] != prompts[name] {
			changedSkill[name] = true
			s.mcp.AddPrompt(skillPrompt(bySkill[name]), s.getSkill(name))
			s.note("prompts/list_changed", "")
		}
	}
	s.prompts = prompts

	// Resources: the rendered prompt and report, each skill's file, and the
	// workspace files that exist.
	res := map[string]string{}
	if r, err := s.render(ctx, s.renderOptions()); err == nil {
		res[PromptURI] = fingerprint(r.Prompt)
		rep, _ := marshal(r.Report)
		res[ReportURI] = fingerprint(string(rep))
	} else {
		s.log.Warn("render failed", "err", err)
	}
	skillRes := map[string]*skills.Skill{}
	for name, sk := range bySkill {
		text, err := s.skillText(sk)
		if err != nil {
			continue
		}
		uri := SkillsPrefix + name
		res[uri] = fingerprint(text)
		skillRes[uri] = sk
	}
	for _, rel := range Files() {
		f, err := s.ws.Load(rel)
		switch {
		case err == nil:
			res[FilesPrefix+rel] = fingerprint(f.Text)
		case errors.Is(err, fs.ErrNotExist):
		default:
			res[FilesPrefix+rel] = "refused"
		}
	}
	gone = gone[:0]
	for uri := range s.res {
		if _, ok := res[uri]; !ok && uri != PromptURI && uri != ReportURI {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.mcp.RemoveResources(gone...)
		s.note("resources/list_changed", "")
	}
	for _, uri := range sortedKeys(res) {
		old, had := s.res[uri]
		switch {
		case uri == PromptURI || uri == ReportURI:
			// Registered once, in New.
		case !had:
			s.addResource(uri, skillRes[uri])
			s.note("resources/list_changed", "")
			continue
		case skillRes[uri] != nil && changedSkill[skillRes[uri].Name]:
			// Re-add: the description may have changed.
			s.addResource(uri, skillRes[uri])
		}
		if had && old != res[uri] {
			if err := s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				s.log.Warn("resource updated notification failed", "uri", uri, "err", err)
			}
			s.note("resources/updated", uri)
		}
	}
	s.res = res
	s.synced = true
	// Reads during the sync may have raised the generation themselves
	// (a first listing counts as a change); what they saw is now known.
	s.lastGen = max(gen, s.ws.Generation())
	return nil
}

func (s *Server) addResource(uri string, sk *skills.Skill) {
	if sk != nil {
		s.mcp.AddResource(&mcp.Resource{
			URI: uri, Name: "skill " + sk.Name, Title: sk.Name, MIMEType: "text/markdown",
			Description: sk.Description(),
		}, s.readSkill)
		return
	}
	rel := strings.TrimPrefix(uri, FilesPrefix)
	s.mcp.AddResource(&mcp.Resource{
		URI: uri, Name: rel, Title: rel, MIMEType: "text/markdown",
		Description: "The workspace file " + rel + ".",
	}, s.readFile)
}

func (s *Server) note(kind, uri string) {
	if s.notified != nil {
		s.notified(kind, uri)
	}
}

func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
