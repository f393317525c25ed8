package server

import (
	"errors"
	"net/http"
	"os"
	"slices"
)

// ErrorShaper writes a problem in another protocol's error shape for the
// requests it claims (the gateway's OpenAI and Anthropic paths, whose
// clients cannot read problem JSON) and reports whether it did.
type ErrorShaper func(w http.ResponseWriter, r *http.Request, p *Problem) bool

// ShapeErrors sets the shaper the server's own errors go through first:
// an unknown route or workspace, a missing token, a panic.
func (s *Server) ShapeErrors(f ErrorShaper) {
	s.mu.Lock()
	s.shaper = f
	s.mu.Unlock()
}

// problem writes err through the shaper, else as problem JSON.
func (s *Server) problem(w http.ResponseWriter, r *http.Request, err error) {
	s.mu.Lock()
	f := s.shaper
	s.mu.Unlock()
	var p *Problem
	if f != nil && errors.As(err, &p) && f(w, r, p) {
		return
	}
	WriteProblem(w, r, err)
}

// MaxListedWorkspaces bounds the names WorkspaceNames lists (for an error
// message, or the inspector's index).
const MaxListedWorkspaces = 20

// WorkspaceNames lists the workspaces the server serves, sorted: "default"
// with Options.Dir, else the plain sub-folders of the root (at most 20,
// for an error message).
func (s *Server) WorkspaceNames() []string {
	if s.wss.dir != "" {
		return []string{DefaultWorkspace}
	}
	entries, err := os.ReadDir(s.wss.root)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && validName(e.Name()) {
			names = append(names, e.Name())
		}
		if len(names) == MaxListedWorkspaces {
			break
		}
	}
	slices.Sort(names)
	return names
}
