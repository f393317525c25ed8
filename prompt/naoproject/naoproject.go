// Package naoproject reads what a nao project declares about itself, so that
// a nao project moved to loom gets the analyst prompt nao would give it:
//
//   - nao_config.yaml: the databases execute_sql accepts (databases[].name
//     and the fields that identify each), the table files each database's
//     context holds (databases[].templates, or the older accessors), and
//     the repositories synced under repos/ (repos[].name);
//   - agent/mcps/mcp.json: the MCP servers (the keys of mcpServers);
//   - agent/charts/: chart plugins, <type>.js or <type>.mjs, named and
//     described by <type>.json.
//
// Everything is read through the workspace's door and read as nao reads it
// (the same defaults, the same lenient handling of a field of the wrong
// type); a file that cannot be parsed is a diagnostic naming the file and
// line, and the project then reads as if the file were not there. Nothing
// here ever reads an environment variable: nao's {{ env('NAME') }}
// placeholders are taken as opaque values.
package naoproject

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/loomctx/loom/internal/yamlsafe"
	"github.com/loomctx/loom/workspace"
)

// File names, relative to the project folder.
const (
	ConfigFile = "nao_config.yaml"
	MCPFile    = "agent/mcps/mcp.json"
	ChartsDir  = "agent/charts"
)

// Templates are the table files a database's context can hold, in the
// order nao lists them; DefaultTemplates are those it assumes when the
// configuration names none.
var (
	Templates        = []string{"columns", "preview", "profiling", "query_history", "ai_summary"}
	DefaultTemplates = []string{"columns", "preview"}
)

// Database is one entry of nao_config.yaml's databases: ID is its name,
// the value execute_sql's database_id takes; the other fields are shown
// beside it when set.
type Database struct {
	ID        string `json:"id"`
	Type      string `json:"type,omitempty"`
	Database  string `json:"database,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
	DatasetID string `json:"dataset_id,omitempty"`
	Catalog   string `json:"catalog,omitempty"`
}

// Details are the database's identifying fields as "key=value" pairs, in
// nao's order, leaving out the empty ones.
func (d Database) Details() []string {
	var out []string
	for _, kv := range [][2]string{{"type", d.Type}, {"database", d.Database}, {"project_id", d.ProjectID}, {"dataset_id", d.DatasetID}, {"catalog", d.Catalog}} {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}

// Config is what nao_config.yaml declares. Found is false when there is
// no such file (or it could not be read or parsed): Templates is then
// DefaultTemplates and the lists are empty.
type Config struct {
	Found     bool
	Databases []Database
	Templates []string // in the order of Templates
	Repos     []string // repos[].name, in the file's order
}

// envPlaceholder is nao's {{ env('NAME') }} (optionally $-prefixed), which
// is not YAML: it is replaced by a plain word before parsing.
var envPlaceholder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$?\{\{\s*env\(['"][^'"]+['"]\)\s*\}\}`)
})

// LoadConfig reads nao_config.yaml.
func LoadConfig(ws *workspace.Workspace, diags *workspace.Diagnostics) Config {
	cfg := Config{Templates: DefaultTemplates}
	f, ok := ws.Read(ConfigFile, diags)
	if !ok {
		return cfg
	}
	text := envPlaceholder().ReplaceAllLiteralString(f.Text, "env-value")
	root, err := yamlsafe.Parse([]byte(text), yamlsafe.Limits{})
	if err != nil {
		line, msg := 0, err.Error()
		var ye *yamlsafe.Error
		if errors.As(err, &ye) {
			line, msg = ye.Line, ye.Msg
		}
		diags.Add(workspace.Warning, f.Path, line, "nao.config", "cannot be read as YAML (%s); its databases, templates and repos are not used", msg)
		return cfg
	}
	cfg.Found = true
	if root == nil {
		return cfg
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	dbs := field(root, "databases")
	templates := map[string]bool{}
	for _, db := range seq(dbs) {
		if db.Kind != yaml.MappingNode {
			continue
		}
		for _, t := range databaseTemplates(db) {
			templates[t] = true
		}
		name := str(field(db, "name"))
		if name == "" {
			continue
		}
		d := Database{
			ID:        name,
			Type:      str(field(db, "type")),
			Database:  ident(field(db, "database")),
			ProjectID: ident(field(db, "project_id")),
			DatasetID: ident(field(db, "dataset_id")),
			Catalog:   ident(field(db, "catalog")),
		}
		if p := str(field(db, "path")); d.Database == "" && p != "" {
			d.Database = nameFromPath(p)
		}
		cfg.Databases = append(cfg.Databases, d)
	}
	if dbs != nil && dbs.Kind == yaml.SequenceNode {
		var ts []string
		for _, t := range Templates {
			if templates[t] {
				ts = append(ts, t)
			}
		}
		if len(ts) > 0 {
			cfg.Templates = ts
		}
	}
	for _, r := range seq(field(root, "repos")) {
		if r.Kind != yaml.MappingNode {
			continue
		}
		if name := str(field(r, "name")); name != "" {
			cfg.Repos = append(cfg.Repos, name)
		}
	}
	return cfg
}

// databaseTemplates are the templates one database entry names, as nao
// resolves them: templates (or the older accessors) when it is a list,
// with description dropped and how_to_use read as query_history; the
// defaults when it names none that are text.
func databaseTemplates(db *yaml.Node) []string {
	list := field(db, "templates")
	if list == nil {
		list = field(db, "accessors")
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return DefaultTemplates
	}
	var out []string
	for _, t := range list.Content {
		if t.Kind != yaml.ScalarNode || t.Tag != "!!str" {
			continue
		}
		switch t.Value {
		case "description":
			continue
		case "how_to_use":
			out = append(out, "query_history")
		default:
			out = append(out, t.Value)
		}
	}
	if len(out) == 0 {
		return DefaultTemplates
	}
	return out
}

// nameFromPath is the database name nao derives from a DuckDB path:
// "memory" for :memory:, what follows md: or motherduck:, else the file
// name without its extension.
func nameFromPath(p string) string {
	p, _, _ = strings.Cut(p, "?")
	if p == ":memory:" {
		return "memory"
	}
	lower := strings.ToLower(p)
	if strings.HasPrefix(lower, "md:") || strings.HasPrefix(lower, "motherduck:") {
		_, rest, _ := strings.Cut(p, ":")
		if rest = strings.TrimSpace(rest); rest != "" {
			return rest
		}
		return "motherduck"
	}
	base := path.Base(strings.TrimRight(p, "/"))
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return base
}

// field is the value of key in the mapping n, nil when absent.
func field(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func seq(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// str is a text scalar, trimmed; "" for anything else.
func str(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return ""
	}
	return strings.TrimSpace(n.Value)
}

// ident is str, or a number written as nao's String(n) would.
func ident(n *yaml.Node) string {
	if n != nil && n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return str(n)
}

// MCPServers are the server names agent/mcps/mcp.json declares, the keys of
// its mcpServers object in the file's order; nil when there is no such file.
func MCPServers(ws *workspace.Workspace, diags *workspace.Diagnostics) []string {
	f, ok := ws.Read(MCPFile, diags)
	if !ok {
		return nil
	}
	names, err := objectKeys([]byte(f.Text), "mcpServers")
	if err != nil {
		diags.Add(workspace.Warning, f.Path, lineOf(f.Text, err), "nao.mcp", "cannot be read as JSON (%s); its MCP servers are not listed", err)
		return nil
	}
	return names
}

// objectKeys returns the keys, in order, of the object under key in the
// JSON object data. Keys with control characters are left out.
func objectKeys(data []byte, key string) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil {
		return nil, err
	} else if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("the file is not a JSON object")
	}
	var out []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		if k != key {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		t, err = dec.Token()
		if err != nil {
			return nil, err
		}
		if d, ok := t.(json.Delim); !ok || d != '{' {
			return nil, errors.New(key + " is not an object")
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, err
			}
			name, _ := t.(string)
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			if name = strings.TrimSpace(name); name != "" && !workspace.HasControls(name) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lineOf is the line a JSON syntax error is on, 0 when unknown.
func lineOf(text string, err error) int {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return 0
	}
	off := min(int(se.Offset), len(text))
	return strings.Count(text[:off], "\n") + 1
}

// Chart is one chart plugin: Type is what display_chart's chart_type takes
// (the module's file name without extension).
type Chart struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	File        string `json:"file"`
}

// builtinCharts are display_chart's own chart types; a plugin cannot take
// one of these names.
var builtinCharts = []string{
	"area", "bar", "donut", "horizontal_bar", "horizontal_bar_100", "kpi_card", "line", "mixed",
	"pie", "radar", "scatter", "stacked_area", "stacked_area_100", "stacked_bar", "stacked_bar_100", "table",
}

// Metadata caps, as nao's schema has them.
const (
	maxChartName        = 80
	maxChartDescription = 500
)

// Charts lists agent/charts/'s chart plugins in name order: each
// <type>.js or <type>.mjs whose type is lowercase letters, digits, "-"
// and "_" starting with a letter, is not a built-in chart type, and is not
// given twice (a type with both a .js and an .mjs file is left out, with
// a warning). <type>.json may give its name and description; without
// one, the name is the type in title case. Other files are not charts.
func Charts(ws *workspace.Workspace, diags *workspace.Diagnostics) []Chart {
	entries, err := ws.ReadDir(ChartsDir)
	if err != nil {
		return nil
	}
	files := map[string]string{}
	var types, dup []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		typ, ok := pluginType(e.Name())
		if !ok || slices.Contains(builtinCharts, typ) {
			continue
		}
		if _, seen := files[typ]; seen {
			dup = append(dup, typ)
			continue
		}
		files[typ] = e.Name()
		types = append(types, typ)
	}
	slices.Sort(types)
	var out []Chart
	for _, typ := range types {
		rel := path.Join(ChartsDir, files[typ])
		if slices.Contains(dup, typ) {
			diags.Add(workspace.Warning, rel, 0, "nao.chart-duplicate", "chart type %q has both a .js and an .mjs file; it is left out", typ)
			continue
		}
		if _, ok := ws.Read(rel, diags); !ok {
			continue
		}
		c := Chart{Type: typ, Name: titleCase(typ), File: rel}
		meta := path.Join(ChartsDir, typ+".json")
		if f, ok := ws.Read(meta, diags); ok {
			var m struct {
				Name        *string `json:"name"`
				Description *string `json:"description"`
			}
			name, desc := "", ""
			err := json.Unmarshal([]byte(f.Text), &m)
			if err == nil {
				if m.Name != nil {
					name = strings.TrimSpace(*m.Name)
				}
				if m.Description != nil {
					desc = strings.TrimSpace(*m.Description)
				}
				if m.Name != nil && (name == "" || len([]rune(name)) > maxChartName) {
					err = errors.New("name must be 1 to 80 characters")
				} else if len([]rune(desc)) > maxChartDescription {
					err = errors.New("description must be at most 500 characters")
				}
			}
			if err != nil {
				diags.Add(workspace.Warning, f.Path, lineOf(f.Text, err), "nao.chart-metadata", "%s; the chart is listed without its name and description", err)
			} else {
				if name != "" {
					c.Name = name
				}
				c.Description = desc
			}
		}
		out = append(out, c)
	}
	return out
}

// pluginType is the chart type a file name gives, if it is a plugin module.
func pluginType(name string) (string, bool) {
	typ, ok := strings.CutSuffix(name, ".mjs")
	if !ok {
		if typ, ok = strings.CutSuffix(name, ".js"); !ok {
			return "", false
		}
	}
	if typ == "" || typ[0] < 'a' || typ[0] > 'z' {
		return "", false
	}
	for _, r := range typ {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return "", false
		}
	}
	return typ, true
}

// titleCase is nao's fallback name: "-" and "_" runs become spaces and
// each word starts with a capital.
func titleCase(typ string) string {
	words := strings.FieldsFunc(typ, func(r rune) bool { return r == '-' || r == '_' })
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}
