package server

import (
	"net/http"

	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// SkillList is the body of GET .../skills: every skill found, shadowed and
// broken ones included, and the folder-level and per-skill diagnostics.
type SkillList struct {
	Skills      []*skills.Skill        `json:"skills"`
	Diagnostics []workspace.Diagnostic `json:"diagnostics"`
}

// SkillDetail is one skill with its body.
type SkillDetail struct {
	*skills.Skill
	Body string `json:"body"`
}

// ExpandRequest is the body of POST .../skills/{name}/expand.
type ExpandRequest struct {
	// Text follows the skill reference, as a user would type after /name.
	Text string `json:"text,omitempty"`
	// MaxChars caps the body brought in; 0 means the default (16,000).
	MaxChars int `json:"max_chars,omitempty"`
}

// ExpandResponse is the message with the skill brought in.
type ExpandResponse struct {
	Text string       `json:"text"`
	Uses []skills.Use `json:"uses"`
}

// Skills returns the workspace's skills as the prompt sees them. While the
// workspace is watched and no file changed, the last set is reused.
func (ws *Workspace) Skills() (*skills.Set, error) {
	watched := ws.Door.Watching()
	gen := ws.Door.Generation()
	ws.mu.Lock()
	set, at := ws.skills, ws.skillsGen
	ws.mu.Unlock()
	if watched && set != nil && at == gen {
		return set, nil
	}
	set, err := ws.Builder.Skills()
	if err != nil {
		return nil, err
	}
	ws.mu.Lock()
	ws.skills, ws.skillsGen = set, gen
	ws.mu.Unlock()
	return set, nil
}

func (s *Server) skillSet(ws *Workspace) (*skills.Set, error) {
	set, err := ws.Skills()
	if err != nil {
		return nil, Errorf(http.StatusUnprocessableEntity, "config_invalid", "%v", err)
	}
	return set, nil
}

func (s *Server) listSkills(r *http.Request, ws *Workspace) (any, error) {
	set, err := s.skillSet(ws)
	if err != nil {
		return nil, err
	}
	// The set is shared with other requests: copy what is filled in.
	out := SkillList{Skills: make([]*skills.Skill, len(set.Skills)), Diagnostics: set.Diagnostics}
	if out.Diagnostics == nil {
		out.Diagnostics = []workspace.Diagnostic{}
	}
	for i, sk := range set.Skills {
		c := *sk
		if c.Diagnostics == nil {
			c.Diagnostics = workspace.Diagnostics{}
		}
		out.Skills[i] = &c
	}
	return out, nil
}

func (s *Server) findSkill(r *http.Request, ws *Workspace) (*skills.Set, *skills.Skill, error) {
	set, err := s.skillSet(ws)
	if err != nil {
		return nil, nil, err
	}
	name := r.PathValue("name")
	sk, ok := set.Get(name)
	if !ok {
		return nil, nil, Errorf(http.StatusNotFound, "skill_not_found", "no skill named %q", name)
	}
	return set, sk, nil
}

func (s *Server) getSkill(r *http.Request, ws *Workspace) (any, error) {
	_, sk, err := s.findSkill(r, ws)
	if err != nil {
		return nil, err
	}
	c := *sk // shared with other requests
	if c.Diagnostics == nil {
		c.Diagnostics = workspace.Diagnostics{}
	}
	return SkillDetail{Skill: &c, Body: sk.Body}, nil
}

func (s *Server) expandSkill(r *http.Request, ws *Workspace) (any, error) {
	var q ExpandRequest
	if err := decodeOptional(r, &q); err != nil {
		return nil, err
	}
	if q.MaxChars < 0 {
		return nil, FieldErrorf("max_chars", "must be positive")
	}
	set, sk, err := s.findSkill(r, ws)
	if err != nil {
		return nil, err
	}
	if sk.Status == skills.StatusBroken {
		return nil, Errorf(http.StatusUnprocessableEntity, "skill_broken", "skill %q is broken; see its diagnostics", sk.Name)
	}
	text := "/" + sk.Name
	if q.Text != "" {
		text += " " + q.Text
	}
	out, uses := set.Expand(text, q.MaxChars)
	if uses == nil {
		uses = []skills.Use{}
	}
	return ExpandResponse{Text: out, Uses: uses}, nil
}
