// Package dialects holds the SQL dialect rules that the analyst prompt adds
// for the databases a workspace is connected to.
//
// Rules are data: one Markdown file per dialect, embedded from data/ and
// optionally added to or replaced by the workspace's agent/dialects/*.md.
// A file looks like this:
//
//	---
//	matches: [mssql, fabric]
//	label: T-SQL (Fabric / SQL Server)
//	order: 20
//	---
//
//	## SQL
//
//	- Limit rows with `SELECT TOP n`.
//
//	## Tools
//
//	- A rule about how to use the tools with this database.
//
// The front matter is optional. matches defaults to the file's name, label
// to the name, and order to 1000 (after the built-ins). A bullet may wrap
// onto lines indented by two spaces.
//
// How a workspace file combines with the built-ins:
//   - a file named like a built-in (agent/dialects/mssql.md) replaces it,
//     inheriting its matches, label and order unless it sets them;
//   - with extend: true in its front matter it appends its rules to that
//     built-in instead;
//   - any other file adds a dialect, and for the connection types it
//     matches it wins over a built-in that matches them too.
package dialects

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/loomctx/loom/internal/yamlsafe"
	"github.com/loomctx/loom/workspace"
)

//go:embed data/*.md
var builtinFS embed.FS

// Dir is the workspace folder for extra or replacement dialect files.
const Dir = "agent/dialects"

// defaultOrder places workspace dialects after the built-ins.
const defaultOrder = 1000

// Dialect is the guidance for one SQL dialect.
type Dialect struct {
	Name    string   // the file name without .md, lower case
	Label   string   // shown before the first SQL rule
	Matches []string // connection types, lower case
	Order   int      // position among the dialects of one prompt
	SQL     []string // rules for writing queries
	Tools   []string // rules for using the tools
	Source  string   // "builtin:<name>.md" or the workspace file; both when extended
}

// LabelledSQL returns the SQL rules with the first one led by the label in
// bold, as they are listed in a prompt: "**BigQuery:** Quote …".
func (d Dialect) LabelledSQL() []string {
	if len(d.SQL) == 0 {
		return nil
	}
	out := slices.Clone(d.SQL)
	out[0] = "**" + d.Label + ":** " + out[0]
	return out
}

// Set is every known dialect: the built-ins with the workspace's changes.
type Set struct {
	builtin []Dialect // built-ins, after replacement and extension
	custom  []Dialect // workspace dialects that are not built-in names
}

// Builtin returns the embedded dialects alone. It panics only if the
// embedded data is broken, which a test rules out.
func Builtin() *Set {
	set, err := load(nil, nil)
	if err != nil {
		panic(err)
	}
	return set
}

// Load reads the built-in dialects and the workspace's agent/dialects/*.md
// through the workspace door. A malformed or refused workspace file becomes
// a diagnostic and the others still load; ws may be nil.
func Load(ws *workspace.Workspace, diags *workspace.Diagnostics) (*Set, error) {
	return load(ws, diags)
}

// builtins parses the embedded files once.
var builtins = sync.OnceValues(func() ([]Dialect, error) {
	entries, err := fs.ReadDir(builtinFS, "data")
	if err != nil {
		return nil, err
	}
	var out []Dialect
	for _, e := range entries {
		data, err := fs.ReadFile(builtinFS, "data/"+e.Name())
		if err != nil {
			return nil, err
		}
		d, err := Parse("builtin:"+e.Name(), string(data))
		if err != nil {
			return nil, err
		}
		out = append(out, d.Dialect)
	}
	return out, nil
})

func load(ws *workspace.Workspace, diags *workspace.Diagnostics) (*Set, error) {
	b, err := builtins()
	if err != nil {
		return nil, err
	}
	set := &Set{builtin: slices.Clone(b)}
	if ws != nil {
		set.addWorkspace(ws, diags)
	}
	sortDialects(set.builtin)
	sortDialects(set.custom)
	return set, nil
}

// parseCache keeps parsed workspace files by *workspace.File: the door
// returns the same pointer while a file is unchanged.
var parseCache struct {
	sync.Mutex
	m map[*workspace.File]parseResult
}

type parseResult struct {
	p   Parsed
	err error
}

func parseFile(f *workspace.File) (Parsed, error) {
	parseCache.Lock()
	r, ok := parseCache.m[f]
	parseCache.Unlock()
	if ok {
		return r.p, r.err
	}
	p, err := Parse(f.Path, f.Text)
	parseCache.Lock()
	if parseCache.m == nil || len(parseCache.m) >= 256 { // stale versions pile up; start over
		parseCache.m = map[*workspace.File]parseResult{}
	}
	parseCache.m[f] = parseResult{p, err}
	parseCache.Unlock()
	return p, err
}

func (s *Set) addWorkspace(ws *workspace.Workspace, diags *workspace.Diagnostics) {
	if diags == nil {
		diags = new(workspace.Diagnostics)
	}
	if !ws.IsDir(Dir) {
		return
	}
	entries, err := ws.ReadDir(Dir)
	if err != nil {
		diags.Add(workspace.Warning, Dir, 0, workspace.RefusalCode(err), "%s", workspace.RefusalMessage(err))
		return
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		rel := Dir + "/" + e.Name()
		f, ok := ws.Read(rel, diags)
		if !ok {
			continue
		}
		d, err := parseFile(f)
		if err != nil {
			var pe *ParseError
			line := 0
			if errors.As(err, &pe) {
				line = pe.Line
				err = errors.New(pe.Msg)
			}
			diags.Add(workspace.Warning, rel, line, "dialect.invalid", "%v; file ignored", err)
			continue
		}
		s.merge(d, rel, diags)
	}
}

// merge applies one workspace dialect file.
func (s *Set) merge(p Parsed, rel string, diags *workspace.Diagnostics) {
	d := p.Dialect
	i := slices.IndexFunc(s.builtin, func(b Dialect) bool { return b.Name == d.Name })
	if i < 0 {
		if p.Extend {
			diags.Add(workspace.Warning, rel, p.ExtendLine, "dialect.extend", "extend: no built-in dialect is named %q; the file adds a new dialect", d.Name)
		}
		s.custom = append(s.custom, d)
		return
	}
	b := s.builtin[i]
	if p.Extend {
		b.SQL = append(slices.Clip(b.SQL), d.SQL...)
		b.Tools = append(slices.Clip(b.Tools), d.Tools...)
		b.Source += " + " + rel
		if p.HasMatches {
			b.Matches = union(b.Matches, d.Matches)
		}
		if p.HasLabel {
			b.Label = d.Label
		}
		if p.HasOrder {
			b.Order = d.Order
		}
		s.builtin[i] = b
		return
	}
	if !p.HasMatches {
		d.Matches = b.Matches
	}
	if !p.HasLabel {
		d.Label = b.Label
	}
	if !p.HasOrder {
		d.Order = b.Order
	}
	s.builtin[i] = d
}

// All returns every dialect: built-ins (after the workspace's changes), then
// the workspace's own, each group in order.
func (s *Set) All() []Dialect {
	return append(slices.Clone(s.builtin), s.custom...)
}

// For returns the dialects for the given connection types: matched
// case-insensitively and exactly, each dialect once however many
// connections use it, sorted by order and then name. For a type that both a
// workspace dialect and a built-in match, the workspace dialect wins.
func (s *Set) For(connectionTypes []string) []Dialect {
	var out []Dialect
	seen := map[string]bool{}
	for _, t := range connectionTypes {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			continue
		}
		d, ok := find(s.custom, t)
		if !ok {
			d, ok = find(s.builtin, t)
		}
		if ok && !seen[d.Name] {
			seen[d.Name] = true
			out = append(out, d)
		}
	}
	sortDialects(out)
	return out
}

func find(ds []Dialect, typ string) (Dialect, bool) {
	for _, d := range ds {
		if slices.Contains(d.Matches, typ) {
			return d, true
		}
	}
	return Dialect{}, false
}

func sortDialects(ds []Dialect) {
	slices.SortStableFunc(ds, func(a, b Dialect) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Name, b.Name)
	})
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Parsed is one dialect file with what its front matter set explicitly.
type Parsed struct {
	Dialect
	Extend                         bool
	ExtendLine                     int
	HasMatches, HasLabel, HasOrder bool
}

// ParseError is a malformed dialect file.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

type frontMatter struct {
	Matches []string `yaml:"matches"`
	Label   *string  `yaml:"label"`
	Order   *int     `yaml:"order"`
	Extend  bool     `yaml:"extend"`
}

var typeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`) })

// Parse reads one dialect file; file names it in errors and its base name,
// without .md, is the dialect's name.
func Parse(file, text string) (Parsed, error) {
	name := strings.ToLower(strings.TrimSuffix(path.Base(strings.TrimPrefix(file, "builtin:")), ".md"))
	p := Parsed{Dialect: Dialect{Name: name, Label: name, Matches: []string{name}, Order: defaultOrder, Source: file}}
	fail := func(line int, format string, args ...any) (Parsed, error) {
		return Parsed{}, &ParseError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if !typeName().MatchString(name) {
		return fail(0, "%q is not a dialect name (lowercase letters, digits, _ . and -)", name)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	start := 0
	if len(lines) > 0 && strings.TrimRight(lines[0], " \t") == "---" {
		end := -1
		for i := 1; i < len(lines); i++ {
			if strings.TrimRight(lines[i], " \t") == "---" {
				end = i
				break
			}
		}
		if end < 0 {
			return fail(1, "front matter has no closing ---")
		}
		if err := p.frontMatter(file, strings.Join(lines[1:end], "\n")); err != nil {
			return Parsed{}, err
		}
		start = end + 1
	}

	var (
		section *[]string
		current int // index of the bullet being continued, -1 when none
	)
	current = -1
	for i := start; i < len(lines); i++ {
		ln, n := lines[i], i+1
		trimmed := strings.TrimSpace(ln)
		switch {
		case trimmed == "":
			current = -1
		case strings.HasPrefix(ln, "## "):
			switch strings.TrimSpace(ln[3:]) {
			case "SQL":
				section = &p.SQL
			case "Tools":
				section = &p.Tools
			default:
				return fail(n, "unknown section %q (want \"## SQL\" or \"## Tools\")", strings.TrimSpace(ln[3:]))
			}
			if len(*section) > 0 {
				return fail(n, "section %q appears twice", strings.TrimSpace(ln[3:]))
			}
			current = -1
		case strings.HasPrefix(ln, "- "):
			if section == nil {
				return fail(n, "rule outside a \"## SQL\" or \"## Tools\" section")
			}
			rule := strings.TrimSpace(ln[2:])
			if rule == "" {
				return fail(n, "empty rule")
			}
			*section = append(*section, rule)
			current = len(*section) - 1
		case strings.HasPrefix(ln, "  ") && current >= 0:
			(*section)[current] += " " + trimmed
		default:
			return fail(n, "expected a \"## SQL\" or \"## Tools\" heading or a \"- \" rule, got %q", clip(trimmed))
		}
	}
	if len(p.SQL) == 0 && len(p.Tools) == 0 {
		return fail(0, "no rules (add \"- \" bullets under \"## SQL\" or \"## Tools\")")
	}
	return p, nil
}

func (p *Parsed) frontMatter(file, text string) error {
	var fm frontMatter
	if strings.TrimSpace(text) != "" {
		if err := decodeStrict(text, &fm); err != nil {
			line, msg := 0, err.Error()
			var ye *yamlsafe.Error
			if errors.As(err, &ye) {
				msg = ye.Msg
				if ye.Line > 0 {
					line = ye.Line + 1 // the front matter starts on line 2
				}
			}
			return &ParseError{File: file, Line: line, Msg: "front matter: " + strings.Join(strings.Fields(msg), " ")}
		}
	}
	// keyLine finds the file line of a front-matter key, for messages.
	keyLine := func(key string) int {
		for i, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, key+":") {
				return i + 2 // the front matter starts on line 2
			}
		}
		return 0
	}
	fail := func(key, format string, args ...any) error {
		return &ParseError{File: file, Line: keyLine(key), Msg: "front matter: " + key + ": " + fmt.Sprintf(format, args...)}
	}
	if fm.Matches != nil {
		if len(fm.Matches) == 0 {
			return fail("matches", "must name at least one connection type")
		}
		p.Matches = nil
		for _, m := range fm.Matches {
			m = strings.ToLower(strings.TrimSpace(m))
			if !typeName().MatchString(m) {
				return fail("matches", "%q is not a connection type", m)
			}
			if !slices.Contains(p.Matches, m) {
				p.Matches = append(p.Matches, m)
			}
		}
		p.HasMatches = true
	}
	if fm.Label != nil {
		if strings.TrimSpace(*fm.Label) == "" {
			return fail("label", "must not be empty")
		}
		p.Label, p.HasLabel = strings.TrimSpace(*fm.Label), true
	}
	if fm.Order != nil {
		p.Order, p.HasOrder = *fm.Order, true
	}
	p.Extend = fm.Extend
	p.ExtendLine = keyLine("extend")
	return nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// maxFrontMatter caps a dialect file's front matter before it is parsed.
const maxFrontMatter = 16 << 10

// decodeStrict decodes front matter into v with the capped, linear parser,
// refusing keys v does not have.
func decodeStrict(text string, v any) (err error) {
	body, err := yamlsafe.Parse([]byte(text), yamlsafe.Limits{MaxBytes: maxFrontMatter})
	if err != nil || body == nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = &yamlsafe.Error{Msg: fmt.Sprintf("YAML decoder failed: %v", r)}
		}
	}()
	// The text passed the size and nesting checks; decode it again with
	// unknown keys refused.
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		msg := strings.TrimPrefix(strings.Join(strings.Fields(err.Error()), " "), "yaml: ")
		msg = strings.TrimPrefix(msg, "unmarshal errors: ")
		if m := lineMsg().FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return &yamlsafe.Error{Line: n, Msg: unknownField().ReplaceAllString(m[2], `unknown field "$1"`)}
		}
		return &yamlsafe.Error{Msg: msg}
	}
	return nil
}

var (
	lineMsg      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): (.*)$`) })
	unknownField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^field (\S+) not found in type \S+$`) })
)
