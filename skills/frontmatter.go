package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/loomctx/loom/internal/yamlsafe"
	"github.com/loomctx/loom/workspace"
)

// Requires is what a skill needs from the machine before it can be used.
type Requires struct {
	Bins []string `json:"bins,omitempty"` // executables that must be on PATH
	Env  []string `json:"env,omitempty"`  // environment variables that must be set and non-empty
}

// Frontmatter is the parsed YAML header of a skill file.
type Frontmatter struct {
	Name          string         `json:"name,omitempty"`
	Description   string         `json:"description,omitempty"`
	License       string         `json:"license,omitempty"`
	Compatibility string         `json:"compatibility,omitempty"`
	AllowedTools  []string       `json:"allowed_tools,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	// Always is true when the top-level always key or the nanobot/openclaw
	// metadata says so. `always: false` is false.
	Always   bool     `json:"always,omitempty"`
	Emoji    string   `json:"emoji,omitempty"`
	Requires Requires `json:"requires,omitzero"`
	OS       []string `json:"os,omitempty"`

	// lines maps each top-level key to its line in the file.
	lines map[string]int
}

// Line is the line of the top-level key in the file, or 0 when it is absent.
func (f *Frontmatter) Line(key string) int { return f.lines[key] }

// parsed is one skill file taken apart: what the cache keeps.
type parsed struct {
	fm     Frontmatter
	body   string
	diags  workspace.Diagnostics
	broken bool
	hasFM  bool // the file opened a frontmatter
	// name replaces the skill's name from its place: a flat skill is named
	// by its frontmatter, as nao does. "" keeps the place's name.
	name string
}

// parseSkill splits text (already normalised by the door) into frontmatter
// and body and decodes the frontmatter. path names the file in diagnostics.
// A problem that leaves the file unusable is an error diagnostic and sets
// broken; anything read leniently is a warning.
func parseSkill(path, text string) *parsed {
	p := &parsed{}
	src, body, found, closed := splitFrontmatter(text)
	p.body = body
	p.hasFM = found
	if !found {
		p.diags.Add(workspace.Warning, path, 1, "skill.no-frontmatter", "no frontmatter: the file does not start with a --- line, so the skill has no description")
		return p
	}
	if !closed {
		p.diags.Add(workspace.Error, path, 1, "skill.fence", "frontmatter has no closing --- line")
		p.broken = true
		return p
	}
	fm, diags, err := decodeFrontmatter(path, src)
	p.diags = append(p.diags, diags...)
	if err != nil {
		p.broken = true
		return p
	}
	p.fm = *fm
	return p
}

// splitFrontmatter finds the frontmatter between a first line of "---" and
// the next line of "---" (or "..."). It returns the YAML between them and the
// body after them, with surrounding blank lines trimmed. found is false when
// the text does not open a frontmatter; closed is false when one was opened
// but never closed.
func splitFrontmatter(text string) (src, body string, found, closed bool) {
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return "", strings.TrimSpace(text), false, false
	}
	off := 0
	for off <= len(rest) {
		line, _, _ := strings.Cut(rest[off:], "\n")
		if t := strings.TrimRight(line, " \t"); t == "---" || t == "..." {
			// Like the other loaders, the YAML stops before the fence's own
			// line break, so a clipped block scalar at the end keeps no
			// trailing newline.
			src = strings.TrimSuffix(rest[:off], "\n")
			end := off + len(line)
			if end < len(rest) {
				end++ // the newline after the fence
			}
			return src, trimBody(rest[end:]), true, true
		}
		if off+len(line) >= len(rest) {
			break
		}
		off += len(line) + 1
	}
	return "", "", true, false
}

// trimBody drops blank lines before the body and white space after it.
func trimBody(s string) string {
	s = strings.TrimRight(s, " \t\n")
	for {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok || strings.TrimSpace(line) != "" {
			return s
		}
		s = rest
	}
}

// Bounds on a frontmatter, checked before it is parsed.
const (
	// MaxFrontmatterBytes caps the YAML between the fences. A real
	// frontmatter is a few hundred bytes; the cap keeps a hostile one from
	// costing more than a moment.
	MaxFrontmatterBytes = 32 << 10
	// maxAliasExpansion bounds how many values YAML aliases may add once
	// expanded. A real frontmatter has a handful of aliases, if any; an
	// alias bomb ("billion laughs") adds billions, and is refused before it
	// is decoded. A large frontmatter without aliases adds nothing.
	maxAliasExpansion = 10_000
)

// errFrontmatter marks a frontmatter that cannot be used; the diagnostic
// says why.
var errFrontmatter = errors.New("unusable frontmatter")

// decodeFrontmatter decodes src, the YAML between the fences. Lines in
// diagnostics are file lines: the opening fence is line 1. Flat "key: value"
// frontmatter, the usual kind, is read by [fastFrontmatter]; anything else
// goes to the YAML parser, with the same result.
func decodeFrontmatter(path, src string) (*Frontmatter, workspace.Diagnostics, error) {
	return decode(path, src, true)
}

func decode(path, src string, fast bool) (*Frontmatter, workspace.Diagnostics, error) {
	var diags workspace.Diagnostics
	if len(src) > MaxFrontmatterBytes {
		diags.Add(workspace.Error, path, 1, "skill.frontmatter-size", "frontmatter is %d bytes; the limit is %d, so it is not read", len(src), MaxFrontmatterBytes)
		return nil, diags, errFrontmatter
	}
	fm := &Frontmatter{lines: map[string]int{}}
	var values map[string]any
	if fast {
		values = fastFrontmatter(src, fm.lines)
	}
	if values == nil {
		var err error
		values, err = slowFrontmatter(path, src, fm.lines, &diags)
		if err != nil {
			return nil, diags, err
		}
	}
	fm.fill(path, values, &diags)
	cutComments(path, src, fm, &diags)
	return fm, diags, nil
}

// slowFrontmatter decodes src with the YAML parser into values, recording
// each top-level key's file line in lines.
func slowFrontmatter(path, src string, lines map[string]int, diags *workspace.Diagnostics) (map[string]any, error) {
	body, err := parseYAML(src)
	if err != nil {
		fixed, changed := quoteColonValues(src)
		if len(changed) > 0 {
			if b2, err2 := parseYAML(fixed); err2 == nil {
				body, err = b2, nil
				for _, ln := range changed {
					diags.Add(workspace.Warning, path, ln+1, "skill.unquoted-colon", "value has an unquoted colon; read it as one quoted string (quote it to silence this)")
				}
			}
		}
	}
	if err != nil {
		line, msg := 0, err.Error()
		var ye *yamlsafe.Error
		if errors.As(err, &ye) {
			line, msg = ye.Line, ye.Msg
		}
		diags.Add(workspace.Error, path, max(line+1, 1), "skill.frontmatter", "frontmatter: %s", msg)
		return nil, err
	}
	values := map[string]any{}
	if body == nil {
		return values, nil
	}
	if body.Kind != yaml.MappingNode {
		diags.Add(workspace.Error, path, body.Line+1, "skill.frontmatter", "frontmatter: want a mapping of keys to values, got %s", kindName(body))
		return nil, errFrontmatter
	}
	nodes, expanded := nodeCounts(body)
	if expanded-nodes > maxAliasExpansion {
		diags.Add(workspace.Error, path, body.Line+1, "skill.alias-bomb", "frontmatter: YAML aliases expand its %d values to more than %d; refused", nodes, nodes+maxAliasExpansion)
		return nil, errFrontmatter
	}
	if err := decodeNode(body, &values); err != nil {
		msg := err.Error()
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		line := body.Line
		if m := decodeLine().FindStringSubmatch(msg); m != nil {
			// "line 2: mapping key "name" already defined at line 1", in
			// frontmatter lines: say them as file lines.
			n, _ := strconv.Atoi(m[1])
			line, msg = n, atLine().ReplaceAllStringFunc(m[2], func(s string) string {
				k, _ := strconv.Atoi(strings.TrimPrefix(s, "at line "))
				return "at line " + strconv.Itoa(k+1)
			})
		}
		diags.Add(workspace.Error, path, line+1, "skill.frontmatter", "frontmatter: %s", strings.TrimPrefix(msg, "yaml: "))
		return nil, err
	}
	for i := 0; i+1 < len(body.Content); i += 2 {
		k := body.Content[i]
		if _, seen := lines[k.Value]; !seen {
			lines[k.Value] = k.Line + 1
		}
	}
	return values, nil
}

var (
	decodeLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): (.*)$`) })
	atLine     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`at line \d+`) })
)

// parseYAML parses src, capped and linear (see package yamlsafe).
func parseYAML(src string) (*yaml.Node, error) {
	return yamlsafe.Parse([]byte(src), yamlsafe.Limits{MaxBytes: MaxFrontmatterBytes})
}

// decodeNode decodes n into v; a panic in the decoder is an error.
func decodeNode(n *yaml.Node, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("YAML decoder failed: %v", r)
		}
	}()
	return n.Decode(v)
}

// nodeCounts returns how many nodes the tree holds as written, and how many
// it stands for once every alias is expanded, memoised per node and capped,
// so a bomb costs little to detect.
func nodeCounts(root *yaml.Node) (nodes, expanded int) {
	const ceiling = 1 << 40
	memo := map[*yaml.Node]int{}
	var size func(n *yaml.Node, depth int) int
	size = func(n *yaml.Node, depth int) int {
		if n == nil || depth > 200 {
			return 1
		}
		if v, ok := memo[n]; ok {
			return v
		}
		total := 1
		if n.Kind == yaml.AliasNode {
			total = size(n.Alias, depth+1)
		} else {
			for _, c := range n.Content {
				total = min(total+size(c, depth+1), ceiling)
			}
		}
		memo[n] = total
		return total
	}
	var count func(n *yaml.Node, depth int)
	count = func(n *yaml.Node, depth int) {
		nodes++
		if n.Kind != yaml.AliasNode && depth <= 200 {
			for _, c := range n.Content {
				count(c, depth+1)
			}
		}
	}
	count(root, 0)
	return nodes, size(root, 0)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

// cutComments warns about a top-level text value that YAML cut at " #":
// `description: Fetch #hashtags` reads as "Fetch", since the rest is a
// comment. nanobot's line reader keeps the whole line, so a skill written
// for it loses part of its text here, and the author must hear of it.
func cutComments(path, src string, fm *Frontmatter, diags *workspace.Diagnostics) {
	for _, key := range []string{"name", "description", "license", "compatibility"} {
		line := fm.lines[key]
		if line < 2 {
			continue
		}
		raw, ok := srcLine(src, line-1)
		if !ok {
			continue
		}
		_, v, ok := strings.Cut(raw, ":")
		if !ok {
			continue
		}
		v = strings.TrimLeft(v, " \t")
		if v == "" || strings.ContainsAny(v[:1], `"'|>[{&*!`) {
			continue
		}
		i := strings.Index(v, " #")
		if j := strings.Index(v, "\t#"); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			continue
		}
		diags.Add(workspace.Warning, path, line, "skill.comment-cut",
			"%s is cut at %q: YAML reads \" #\" and what follows as a comment, so the value is %q; quote the whole value to keep it",
			key, strings.TrimSpace(v[i:]), strings.TrimSpace(v[:i]))
	}
}

// srcLine returns line n (1-based) of src.
func srcLine(src string, n int) (string, bool) {
	for i := 1; ; i++ {
		line, rest, more := strings.Cut(src, "\n")
		if i == n {
			return line, true
		}
		if !more {
			return "", false
		}
		src = rest
	}
}

// colonLine is a top-level "key: value" line whose plain value may hold a
// colon.
var colonLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*):[ \t]+(.*\S)[ \t]*$`) })

// quoteColonValues rewrites top-level "key: a: b" lines as `key: "a: b"`, the
// usual hand-written mistake, and returns the lines (1-based) it changed.
func quoteColonValues(src string) (string, []int) {
	lines := strings.Split(src, "\n")
	var changed []int
	for i, line := range lines {
		m := colonLine().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v := m[2]
		if strings.ContainsAny(v[:1], `"'{[|>&*!#%@`+"`") {
			continue
		}
		if !strings.Contains(v, ": ") && !strings.HasSuffix(v, ":") {
			continue
		}
		lines[i] = m[1] + ": " + strconv.Quote(v)
		changed = append(changed, i+1)
	}
	return strings.Join(lines, "\n"), changed
}

// fill copies the decoded values into f, warning about values of the wrong
// kind rather than failing.
func (f *Frontmatter) fill(path string, v map[string]any, diags *workspace.Diagnostics) {
	str := func(key string) string {
		raw, ok := v[key]
		if !ok || raw == nil {
			return ""
		}
		switch s := raw.(type) {
		case string:
			return s
		case bool, int, int64, uint64, float64:
			diags.Add(workspace.Warning, path, f.lines[key], "skill.type", "%s is not a string; read %v as text", key, s)
			return fmt.Sprint(s)
		}
		diags.Add(workspace.Warning, path, f.lines[key], "skill.type", "%s should be a string, not a %s; ignored", key, kindOf(raw))
		return ""
	}
	f.Name = str("name")
	f.Description = str("description")
	f.License = str("license")
	f.Compatibility = str("compatibility")

	switch t := v["allowed-tools"].(type) {
	case nil:
	case string:
		f.AllowedTools = splitTools(t)
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "" {
				f.AllowedTools = append(f.AllowedTools, s)
			}
		}
	default:
		diags.Add(workspace.Warning, path, f.lines["allowed-tools"], "skill.type", "allowed-tools should be a string or a list; ignored")
	}

	if raw, ok := v["always"]; ok && raw != nil {
		switch b := raw.(type) {
		case bool:
			f.Always = b
		case string:
			if pb, err := strconv.ParseBool(strings.TrimSpace(b)); err == nil {
				f.Always = pb
			} else {
				diags.Add(workspace.Warning, path, f.lines["always"], "skill.type", "always should be true or false, not %q; read as false", b)
			}
		default:
			diags.Add(workspace.Warning, path, f.lines["always"], "skill.type", "always should be true or false; read as false")
		}
	}

	if raw, ok := v["metadata"]; ok && raw != nil {
		f.readMetadata(path, raw, diags)
	}
}

// readMetadata takes metadata as a YAML mapping or as nanobot's one-line
// JSON string, and reads the nanobot (or openclaw) payload inside it.
func (f *Frontmatter) readMetadata(path string, raw any, diags *workspace.Diagnostics) {
	line := f.lines["metadata"]
	var m map[string]any
	switch t := raw.(type) {
	case map[string]any:
		m = t
	case string:
		if err := json.Unmarshal([]byte(t), &m); err != nil {
			diags.Add(workspace.Warning, path, line, "skill.metadata", "metadata is a string but not a JSON object (%v); ignored", err)
			return
		}
	default:
		diags.Add(workspace.Warning, path, line, "skill.metadata", "metadata should be a mapping, not a %s; ignored", kindOf(raw))
		return
	}
	f.Metadata = m
	payload := m["nanobot"]
	if payload == nil {
		payload = m["openclaw"]
	}
	if s, ok := payload.(string); ok {
		var pm map[string]any
		if json.Unmarshal([]byte(s), &pm) == nil {
			payload = pm
		}
	}
	p, ok := payload.(map[string]any)
	if !ok {
		if payload != nil {
			diags.Add(workspace.Warning, path, line, "skill.metadata", "metadata.nanobot should be a mapping; ignored")
		}
		return
	}
	if b, ok := p["always"].(bool); ok && b {
		f.Always = true
	}
	if e, ok := p["emoji"].(string); ok {
		f.Emoji = e
	}
	f.OS = stringList(p["os"])
	if req, ok := p["requires"].(map[string]any); ok {
		f.Requires.Bins = stringList(req["bins"])
		f.Requires.Env = stringList(req["env"])
	}
}

// splitTools splits allowed-tools: the spec separates tools with spaces, but
// comma-separated lists are common in the wild.
func splitTools(s string) []string {
	var out []string
	if strings.Contains(s, ",") {
		for _, t := range strings.Split(s, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
		return out
	}
	return strings.Fields(s)
}

// stringList reads a list of strings, or a single string, leaving out
// anything else.
func stringList(v any) []string {
	switch t := v.(type) {
	case string:
		if t != "" {
			return []string{t}
		}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "mapping"
	case []any:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}
