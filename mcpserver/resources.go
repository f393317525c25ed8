package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// Resource URIs.
const (
	PromptURI     = "loom://prompt"
	ReportURI     = "loom://report"
	SkillsPrefix  = "loom://skills/"
	FilesPrefix   = "loom://files/"
	skillTemplate = "loom://skills/{name}"
)

// Files are the workspace files served as resources, when they exist: the
// bootstrap files, RULES.md and the long-term memory file. No other path is
// ever served under loom://files/.
func Files() []string {
	out := append([]string{}, prompt.BootstrapFiles...)
	return append(out, "RULES.md", memory.MemoryFile)
}

func (s *Server) addTemplates() {
	s.mcp.AddResource(&mcp.Resource{
		URI: PromptURI, Name: "prompt", Title: "Rendered system prompt", MIMEType: "text/markdown",
		Description: "The system prompt loom renders from this workspace, with loom.yaml's options.",
	}, s.readPrompt)
	s.mcp.AddResource(&mcp.Resource{
		URI: ReportURI, Name: "report", Title: "Render report", MIMEType: "application/json",
		Description: "What each section of the rendered prompt cost, what was left out and why, and the diagnostics.",
	}, s.readReport)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: skillTemplate, Name: "skill", Title: "Skill file", MIMEType: "text/markdown",
		Description: "A skill's SKILL.md, by skill name.",
	}, s.readSkill)
}

func (s *Server) readPrompt(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	res, err := s.render(ctx, s.renderOptions())
	if err != nil {
		return nil, err
	}
	return textResult(req.Params.URI, "text/markdown", res.Prompt), nil
}

func (s *Server) readReport(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	res, err := s.render(ctx, s.renderOptions())
	if err != nil {
		return nil, err
	}
	data, err := marshal(res.Report)
	if err != nil {
		return nil, err
	}
	return textResult(req.Params.URI, "application/json", string(data)), nil
}

// render renders with opts. A prompt over budget even with everything
// droppable dropped is still a prompt: it is returned, as loom render does.
func (s *Server) render(ctx context.Context, opts prompt.Options) (*prompt.Result, error) {
	res, err := s.b().Render(ctx, opts)
	if res != nil {
		return res, nil
	}
	return nil, err
}

// skillName returns the name a loom://skills/ URI asks for, or an error when
// it is not a plain skill name: no path, no dot-dot, no escapes.
func skillName(uri string) (string, error) {
	name, ok := strings.CutPrefix(uri, SkillsPrefix)
	if !ok || !validName(name) {
		return "", fmt.Errorf("%s: not a skill resource (loom://skills/NAME, where NAME is a skill name)", uri)
	}
	return name, nil
}

// validName accepts the characters a skill's folder or file name may have
// and nothing that could walk a path.
func validName(name string) bool {
	if name == "" || len(name) > skills.MaxNameLen || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return false
	}
	for _, r := range name {
		ok := r == '-' || r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return true
}

func (s *Server) readSkill(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	name, err := skillName(uri)
	if err != nil {
		return nil, err
	}
	set, err := s.skills()
	if err != nil {
		return nil, err
	}
	sk, ok := set.Get(name)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	text, err := s.skillText(sk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, err)
	}
	return textResult(uri, "text/markdown", text), nil
}

// skillText is a skill's file as the door reads it. A built-in skill, or one
// from a folder outside the workspace, is served as its loaded body.
func (s *Server) skillText(sk *skills.Skill) (string, error) {
	if sk.Status == skills.StatusBroken {
		if len(sk.Diagnostics) > 0 {
			return "", fmt.Errorf("skill %q cannot be read: %s", sk.Name, sk.Diagnostics[0].Message)
		}
		return "", fmt.Errorf("skill %q cannot be read", sk.Name)
	}
	if sk.Source != skills.SourceWorkspace {
		return sk.Body, nil
	}
	f, err := s.ws.Load(sk.Path)
	if err != nil {
		return "", refusal(err)
	}
	return f.Text, nil
}

func (s *Server) readFile(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rel, ok := strings.CutPrefix(uri, FilesPrefix)
	if !ok || !servedFile(rel) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	f, err := s.ws.Load(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, refusal(err))
	}
	return textResult(uri, "text/markdown", f.Text), nil
}

func servedFile(rel string) bool {
	for _, f := range Files() {
		if rel == f {
			return true
		}
	}
	return false
}

// refusal words a door error for a client: workspace-relative, no
// absolute path.
func refusal(err error) error {
	var re *workspace.RefusedError
	if errors.As(err, &re) {
		return fmt.Errorf("%s: refused: %s", re.Path, re.Message())
	}
	return err
}

func textResult(uri, mime, text string) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: text}}}
}

// marshal is JSON without HTML escaping, as loom's other JSON output.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
