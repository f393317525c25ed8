// Package config holds loom.yaml: its schema, its defaults and its
// validation. Each subsystem reads its own section of [Config].
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/internal/redact"
	"github.com/loomctx/loom/workspace"
)

// FileName is where a workspace keeps its configuration.
const FileName = "loom.yaml"

// The presets loom can render.
const (
	PresetAssistant = "assistant"
	PresetAnalyst   = "analyst"
)

// Config is a workspace's loom.yaml. Every field is optional; see
// testdata/config/full.yaml for the documented example. A zero string, slice
// or number means "not set" unless its comment says otherwise; a nil *bool
// means "not set", so that false can be told apart from the default.
type Config struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Emoji       string `yaml:"emoji"`

	// Preset is "assistant" or "analyst". Load always fills it: from
	// loom.yaml when given there, otherwise from [DetectPreset].
	Preset string `yaml:"preset"`

	// Encoding is a tokenizer name (o200k_base, cl100k_base, chars4) and
	// Model a model name whose encoding the tokens package knows. Encoding
	// wins when both are given; "" leaves the choice to the caller.
	Encoding string `yaml:"encoding"`
	Model    string `yaml:"model"`

	Budget Budget `yaml:"budget"`

	// Timezone is an IANA zone name, checked when the prompt is rendered;
	// "" means UTC.
	Timezone string `yaml:"timezone"`

	// Disable names sections to leave out of the prompt.
	Disable []string `yaml:"disable"`

	Runtime Runtime `yaml:"runtime"`

	// Tools names the tools the agent has; tool-specific prompt rules are
	// kept only for those. Nil means every rule is kept.
	Tools []string `yaml:"tools"`

	// MCPServers are the MCP servers the agent can reach; the prompt lists
	// them when the agent has the mcp_call tool.
	MCPServers []MCPServer `yaml:"mcp_servers"`

	// MaxFileSize caps every file read from the workspace, in bytes.
	MaxFileSize int64 `yaml:"max_file_size"`

	Skills    SkillsConfig    `yaml:"skills"`
	Memory    MemoryConfig    `yaml:"memory"`
	Overrides OverridesConfig `yaml:"overrides"`
	LLM       LLMConfig       `yaml:"llm"`
	Gateway   GatewayConfig   `yaml:"gateway"`

	// File is the workspace-relative file the config came from, or "" for
	// defaults.
	File string `yaml:"-"`

	lines map[string]int // key path → line, for Line
}

// Budget holds token budgets. Zero means unlimited.
type Budget struct {
	Total int `yaml:"total"`
	// Sections maps a section name (memory, skills, …) to its own cap.
	Sections map[string]int `yaml:"sections"`
}

// Runtime configures the runtime part of the identity block.
type Runtime struct {
	Policy RuntimePolicy `yaml:"policy"`
	// Placement is "before" or "after": where the runtime context goes
	// relative to the user's text.
	Placement string `yaml:"placement"`
}

// RuntimePolicy replaces the built-in platform policy text per OS family.
// "" keeps loom's own text.
type RuntimePolicy struct {
	Windows string `yaml:"windows"`
	POSIX   string `yaml:"posix"`
}

// SkillsConfig configures skill discovery.
type SkillsConfig struct {
	// Paths are extra folders searched for skills, after the standard
	// skills/ and agent/skills/: relative ones inside the workspace, or
	// absolute ones anywhere.
	Paths []string `yaml:"paths"`
	// AbsolutePaths shows skill locations as absolute paths in the prompt
	// instead of workspace-relative ones. Nil means false.
	AbsolutePaths *bool `yaml:"absolute_paths"`
	// Debounce is how long a watcher waits for more file events before
	// reloading. 0 reloads at once.
	Debounce Duration `yaml:"debounce"`
	// Builtin lists loom's built-in skills with the workspace's. Nil means
	// true; false leaves them out and keeps the workspace's own skills.
	Builtin *bool `yaml:"builtin"`
}

// UsesBuiltins reports whether loom's built-in skills are listed.
func (s SkillsConfig) UsesBuiltins() bool { return s.Builtin == nil || *s.Builtin }

// MCPServer is one MCP server named in loom.yaml.
type MCPServer struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// MemoryConfig configures structured memory.
type MemoryConfig struct {
	// Budget is the token cap of the memory section.
	Budget int `yaml:"budget"`
	// Categories, in priority order; nil means the memory package's
	// defaults.
	Categories []MemoryCategory `yaml:"categories"`
	// ExcludeCurrentChat leaves memories taken from the current chat out of
	// its own prompt. Nil means true.
	ExcludeCurrentChat *bool `yaml:"exclude_current_chat"`
	// DB is the memory database, a path inside the workspace (relative, no
	// ".."). Only the operator puts it elsewhere; see [MemoryStoreLocation].
	DB string `yaml:"db"`
	// Store is where a server keeps this workspace's memories, sessions
	// and memory files: "sqlite" (the default: memory.db plus session and
	// memory files in the folder) or "postgres", shared by every replica.
	// `loom serve --store` overrides it.
	Store string `yaml:"store"`
	// DSNEnv names the variable holding the PostgreSQL DSN; default
	// LOOM_PG_DSN. A workspace may only name a LOOM_* variable: it picks
	// which of the operator's variables is read, never the DSN itself.
	DSNEnv string `yaml:"dsn_env"`
	// Retrieval is how a turn's memories are chosen: "priority" (the
	// whole budget by category priority and recency, in the system
	// prompt) or "relevant" (half of it so, in the system prompt, and
	// half with the memories most relevant to the current message, beside
	// it). Empty means DefaultRetrieval.
	Retrieval string `yaml:"retrieval"`
	// Embeddings, when set, names an OpenAI-compatible /v1/embeddings
	// endpoint: memories get vectors in the background, and a turn's
	// recall fuses a ranking by meaning with the ranking by words. Nil
	// (the default) changes nothing.
	Embeddings *EmbeddingsConfig `yaml:"embeddings"`
}

// EmbeddingsConfig names the embedding endpoint of memory.embeddings. The
// key follows llm's rules (package llm's Resolve): api_key_env may name
// only a LOOM_* variable (or one in LOOM_ALLOWED_KEY_ENVS), and a key goes
// only to an official endpoint, the operator's LOOM_LLM_BASE_URL or a host
// in LOOM_ALLOWED_ENDPOINTS.
type EmbeddingsConfig struct {
	// BaseURL is the API's base, e.g. https://api.openai.com/v1; the
	// request goes to BaseURL + "/embeddings".
	BaseURL string `yaml:"base_url"`
	Model   string `yaml:"model"`
	// APIKeyEnv names the variable holding the key; none sends no key.
	APIKeyEnv string `yaml:"api_key_env"`
	// Dimensions, when set, is asked of the endpoint and required of
	// every vector it returns; 0 takes the model's own length (the first
	// reply fixes it).
	Dimensions int `yaml:"dimensions"`
	// QueryTimeout bounds the per-turn call that embeds the message;
	// default DefaultEmbeddingQueryTimeout. Past it the turn's recall is
	// by words alone.
	QueryTimeout Duration `yaml:"query_timeout"`
}

// MaxEmbeddingDimensions is the longest vector memory.embeddings accepts.
const MaxEmbeddingDimensions = 8192

// DefaultEmbeddingQueryTimeout bounds a turn's query embedding unless
// memory.embeddings.query_timeout says otherwise.
const DefaultEmbeddingQueryTimeout = 500 * time.Millisecond

// Memory retrieval modes (memory.retrieval in loom.yaml).
const (
	RetrievalPriority = "priority"
	RetrievalRelevant = "relevant"
	// DefaultRetrieval is the mode when loom.yaml names none.
	DefaultRetrieval = RetrievalRelevant
)

// Relevant says whether a turn's memories are partly chosen by relevance
// to the current message.
func (m MemoryConfig) Relevant() bool {
	r := m.Retrieval
	if r == "" {
		r = DefaultRetrieval
	}
	return r == RetrievalRelevant
}

// Memory store kinds (memory.store in loom.yaml, loom serve --store).
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// DefaultDSNEnv is the variable the PostgreSQL DSN is read from unless
// memory.dsn_env or --dsn-env names another.
const DefaultDSNEnv = "LOOM_PG_DSN"

// StoreKind is the workspace's memory.store, "sqlite" when unset.
func (m MemoryConfig) StoreKind() string {
	if m.Store == "" {
		return StoreSQLite
	}
	return m.Store
}

// DSNVar is the variable memory.dsn_env names, DefaultDSNEnv when unset.
func (m MemoryConfig) DSNVar() string {
	if m.DSNEnv == "" {
		return DefaultDSNEnv
	}
	return m.DSNEnv
}

// MemoryCategory is one configured kind of memory.
type MemoryCategory struct {
	Name  string `yaml:"name"`
	Label string `yaml:"label"`
}

// OverridesConfig configures agent/prompts/*.md overrides.
type OverridesConfig struct {
	// Keep names default sections still appended after an override that
	// replaces the whole prompt.
	Keep []string `yaml:"keep"`
}

// LLMConfig configures the model used for memory extraction and
// consolidation.
type LLMConfig struct {
	Provider  string   `yaml:"provider"` // "openai" or "anthropic"
	BaseURL   string   `yaml:"base_url"`
	Model     string   `yaml:"model"`
	APIKeyEnv string   `yaml:"api_key_env"` // name of the variable holding the key
	Timeout   Duration `yaml:"timeout"`
	// MaxReplyBytes bounds a reply's text and tool arguments while it
	// streams; 0 is the llm package's default (1 MiB).
	MaxReplyBytes int64 `yaml:"max_reply_bytes"`
	// ContextWindow is the model's context window in tokens: a request
	// over it less the reply's reserve has its oldest history left out
	// (package fit). 0 means the window loom knows for the model
	// (fit.KnownWindow), and no fitting for a model it does not know.
	ContextWindow int `yaml:"context_window"`
	// ReserveOutput is the room kept for the reply when a request names
	// no max_tokens; default DefaultReserveOutput.
	ReserveOutput int                 `yaml:"reserve_output"`
	Extraction    ExtractionConfig    `yaml:"extraction"`
	Consolidation ConsolidationConfig `yaml:"consolidation"`
}

// ExtractionConfig configures memory extraction after a turn.
type ExtractionConfig struct {
	// Enabled nil means: enabled when a provider is configured.
	Enabled *bool `yaml:"enabled"`
	// IncludeAssistant also shows the assistant's replies to the
	// extractor. Nil means false.
	IncludeAssistant *bool `yaml:"include_assistant"`
}

// ConsolidationConfig configures folding history into long-term memory.
type ConsolidationConfig struct {
	// Enabled nil means: enabled when a provider is configured.
	Enabled *bool `yaml:"enabled"`
	// ThresholdTokens is the history size that triggers consolidation.
	ThresholdTokens int `yaml:"threshold_tokens"`
}

// Duration is a time.Duration written in loom.yaml as a Go duration string
// such as "300ms" or "1m30s".
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes d as a duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a duration string, so that a Config read back from
// its JSON is the same Config.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Defaults that [Default] fills in and [Load] keeps for keys
// loom.yaml does not set.
const (
	DefaultMemoryBudget    = 1000
	DefaultSkillsDebounce  = 300 * time.Millisecond
	DefaultLLMTimeout      = 60 * time.Second
	DefaultRuntimePosition = "after" // after the user text: the default, and nanobot's latest
	DefaultReserveOutput   = 4096
)

// Default is the configuration of a workspace without loom.yaml,
// before its preset is detected.
func Default() *Config {
	return &Config{
		MaxFileSize: workspace.DefaultMaxFileSize,
		Runtime:     Runtime{Placement: DefaultRuntimePosition},
		Skills:      SkillsConfig{Debounce: Duration(DefaultSkillsDebounce)},
		Memory:      MemoryConfig{Budget: DefaultMemoryBudget},
		LLM:         LLMConfig{Timeout: Duration(DefaultLLMTimeout), ReserveOutput: DefaultReserveOutput},
	}
}

// Error is a problem in loom.yaml. Its message is one line:
// "loom.yaml:7: unknown field \"budgt\"".
type Error struct {
	File string // workspace-relative
	Line int    // 0 when unknown
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Load reads loom.yaml from ws. A missing file gives the defaults and
// no error. While loom.yaml is unchanged the parse is reused, so the slices
// and maps of the result are shared: treat them as read-only. Unknown keys, wrong types and invalid values are a
// *Error naming the line. The preset is detected when the file does
// not name one.
func Load(ws *workspace.Workspace) (*Config, error) {
	f, err := ws.Load(FileName)
	if errors.Is(err, fs.ErrNotExist) {
		ws.SetMaxFileSize(0) // the operator's cap, or the default
		cfg := Default()
		cfg.Preset = DetectPreset(ws)
		return cfg, nil
	}
	if err != nil {
		return nil, &Error{File: FileName, Msg: workspace.RefusalMessage(err)}
	}
	parsed, err := parseCached(f)
	if err != nil {
		return nil, err
	}
	cfg := *parsed // the cached value stays as parsed; only Preset is filled here
	// max_file_size applies to every later read and write of this
	// workspace; left at the default, the operator's cap stays.
	if cfg.MaxFileSize != workspace.DefaultMaxFileSize {
		ws.SetMaxFileSize(cfg.MaxFileSize)
	} else {
		ws.SetMaxFileSize(0)
	}
	if cfg.Preset == "" {
		cfg.Preset = DetectPreset(ws)
	}
	return &cfg, nil
}

// configCache keeps parsed configs by *File: the door returns the same
// pointer while the file is unchanged, so a warm render parses nothing.
var configCache struct {
	sync.Mutex
	m map[*workspace.File]configResult
}

type configResult struct {
	cfg *Config
	err error
}

func parseCached(f *workspace.File) (*Config, error) {
	configCache.Lock()
	r, ok := configCache.m[f]
	configCache.Unlock()
	if ok {
		return r.cfg, r.err
	}
	cfg, err := Parse(f.Path, []byte(f.Text))
	configCache.Lock()
	if configCache.m == nil || len(configCache.m) >= 64 { // stale versions pile up; start over
		configCache.m = map[*workspace.File]configResult{}
	}
	configCache.m[f] = configResult{cfg, err}
	configCache.Unlock()
	return cfg, err
}

// DetectPreset chooses the preset of a workspace whose loom.yaml names
// none: "analyst" when it has a databases/ or agent/ folder or a RULES.md
// (the marks of a nao project), otherwise "assistant".
func DetectPreset(ws *workspace.Workspace) string {
	if ws.IsDir("databases") || ws.IsDir("agent") || ws.Exists("RULES.md") {
		return PresetAnalyst
	}
	return PresetAssistant
}

// Line returns the line of a key in loom.yaml, written as a dotted path
// with list indexes: "preset", "budget.sections.memory", "disable[2]". It
// returns 0 for a key the file does not set. Callers use it to place
// diagnostics about values only they can judge, such as section names.
func (c *Config) Line(key string) int { return c.lines[key] }

// lineNear is the line of key, or of its nearest parent that the file sets.
func (c *Config) lineNear(key string) int {
	for key != "" {
		if n, ok := c.lines[key]; ok {
			return n
		}
		key = key[:max(strings.LastIndexAny(key, ".["), 0)]
	}
	return 0
}

// has reports whether loom.yaml sets key.
func (c *Config) has(key string) bool { _, ok := c.lines[key]; return ok }

// fillDefaults copies defaults from def into keys the file left unset.
func (c *Config) fillDefaults(def *Config) {
	if !c.has("max_file_size") {
		c.MaxFileSize = def.MaxFileSize
	}
	if !c.has("runtime.placement") {
		c.Runtime.Placement = def.Runtime.Placement
	}
	if !c.has("skills.debounce") {
		c.Skills.Debounce = def.Skills.Debounce
	}
	if !c.has("memory.budget") {
		c.Memory.Budget = def.Memory.Budget
	}
	if !c.has("llm.timeout") {
		c.LLM.Timeout = def.LLM.Timeout
	}
	if !c.has("llm.reserve_output") {
		c.LLM.ReserveOutput = def.LLM.ReserveOutput
	}
}

var (
	sectionName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]*$`) })
	envName     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// validate checks values that decode fine but mean nothing. Only keys the
// file sets are checked, so defaults never fail.
func (c *Config) validate() error {
	var err error
	fail := func(key, format string, args ...any) {
		if err == nil {
			err = &Error{File: c.File, Line: c.lineNear(key), Msg: key + ": " + fmt.Sprintf(format, args...)}
		}
	}
	oneOf := func(key, val string, allowed ...string) {
		if c.has(key) && !slices.Contains(allowed, val) {
			fail(key, "%q is not one of %s", val, strings.Join(allowed, ", "))
		}
	}
	positive := func(key string, n int64) {
		if c.has(key) && n <= 0 {
			fail(key, "must be a positive number, got %d", n)
		}
	}
	names := func(key string, list []string) {
		for i, s := range list {
			if !sectionName().MatchString(s) {
				fail(indexKey(key, i), "%q is not a section name (lowercase letters, digits, _ and -)", s)
			}
		}
	}
	nonEmpty := func(key, val string) {
		if c.has(key) && strings.TrimSpace(val) == "" {
			fail(key, "must not be empty")
		}
	}

	oneOf("preset", c.Preset, PresetAssistant, PresetAnalyst)
	oneOf("encoding", c.Encoding, "o200k_base", "cl100k_base", "chars4")
	nonEmpty("model", c.Model)
	positive("budget.total", int64(c.Budget.Total))
	for _, k := range sortedKeys(c.Budget.Sections) {
		key := "budget.sections." + k
		if !sectionName().MatchString(k) {
			fail(key, "%q is not a section name (lowercase letters, digits, _ and -)", k)
		}
		positive(key, int64(c.Budget.Sections[k]))
	}
	nonEmpty("timezone", c.Timezone)
	names("disable", c.Disable)
	oneOf("runtime.placement", c.Runtime.Placement, "before", "after")
	oneOf("gateway.client_system", c.Gateway.ClientSystem, ClientSystemAppend, ClientSystemReplace, ClientSystemIgnore)
	for i, t := range c.Tools {
		if strings.TrimSpace(t) == "" || strings.ContainsAny(t, " \t,") {
			fail(indexKey("tools", i), "%q is not a tool name", t)
		}
	}
	positive("max_file_size", c.MaxFileSize)
	for i, p := range c.Skills.Paths {
		key := indexKey("skills.paths", i)
		switch {
		case strings.TrimSpace(p) == "":
			fail(key, "must not be empty")
		case path.IsAbs(p):
			// An absolute folder is the user's explicit choice; the skills
			// package reads it through a door of its own.
		case strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':'):
			fail(key, "%q is a Windows path; use a path relative to the workspace or an absolute one", p)
		case cleanRel(p) == ".." || strings.HasPrefix(cleanRel(p), "../"):
			fail(key, "%q climbs out of the workspace; name the folder by its absolute path instead", p)
		}
	}
	positive("memory.budget", int64(c.Memory.Budget))
	seen := map[string]bool{}
	for i, cat := range c.Memory.Categories {
		key := indexKey("memory.categories", i)
		switch {
		case !sectionName().MatchString(cat.Name):
			fail(key+".name", "%q is not a category name (lowercase letters, digits, _ and -)", cat.Name)
		case strings.TrimSpace(cat.Label) == "":
			fail(key+".label", "category %q needs a label", cat.Name)
		case seen[cat.Name]:
			fail(key+".name", "category %q is listed twice", cat.Name)
		}
		seen[cat.Name] = true
	}
	if c.has("memory.db") {
		if msg := insideWorkspace(c.Memory.DB); msg != "" {
			fail("memory.db", "%s", msg)
		}
	}
	oneOf("memory.store", c.Memory.Store, StoreSQLite, StorePostgres)
	oneOf("memory.retrieval", c.Memory.Retrieval, RetrievalPriority, RetrievalRelevant)
	if e := c.Memory.Embeddings; e != nil {
		u, perr := url.Parse(e.BaseURL)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fail("memory.embeddings.base_url", "%q is not an http or https URL", redact.URL(e.BaseURL))
		}
		if strings.TrimSpace(e.Model) == "" {
			fail("memory.embeddings.model", "must name the embedding model")
		}
		if c.has("memory.embeddings.api_key_env") && !envName().MatchString(e.APIKeyEnv) {
			fail("memory.embeddings.api_key_env", "%q is not an environment variable name", e.APIKeyEnv)
		}
		if c.has("memory.embeddings.dimensions") && (e.Dimensions <= 0 || e.Dimensions > MaxEmbeddingDimensions) {
			fail("memory.embeddings.dimensions", "must be between 1 and %d, got %d", MaxEmbeddingDimensions, e.Dimensions)
		}
		if c.has("memory.embeddings.query_timeout") && (e.QueryTimeout <= 0 || e.QueryTimeout.Std() > 30*time.Second) {
			fail("memory.embeddings.query_timeout", "must be longer than 0s and at most 30s")
		}
	}
	if c.has("memory.dsn_env") {
		switch v := c.Memory.DSNEnv; {
		case !envName().MatchString(v):
			fail("memory.dsn_env", "%q is not an environment variable name", v)
		case !strings.HasPrefix(v, "LOOM_"):
			fail("memory.dsn_env", "%q does not start with LOOM_; a workspace may only name a LOOM_* variable (the operator chooses any with loom serve --dsn-env)", v)
		}
	}
	names("overrides.keep", c.Overrides.Keep)
	oneOf("llm.provider", c.LLM.Provider, "openai", "anthropic")
	if c.has("llm.base_url") {
		u, perr := url.Parse(c.LLM.BaseURL)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fail("llm.base_url", "%q is not an http or https URL", redact.URL(c.LLM.BaseURL))
		}
	}
	nonEmpty("llm.model", c.LLM.Model)
	if c.has("llm.api_key_env") && !envName().MatchString(c.LLM.APIKeyEnv) {
		fail("llm.api_key_env", "%q is not an environment variable name", c.LLM.APIKeyEnv)
	}
	if c.has("llm.timeout") && c.LLM.Timeout <= 0 {
		fail("llm.timeout", "must be longer than 0s")
	}
	positive("llm.consolidation.threshold_tokens", int64(c.LLM.Consolidation.ThresholdTokens))
	positive("llm.max_reply_bytes", c.LLM.MaxReplyBytes)
	positive("llm.context_window", int64(c.LLM.ContextWindow))
	positive("llm.reserve_output", int64(c.LLM.ReserveOutput))
	if w, r := c.LLM.ContextWindow, c.LLM.ReserveOutput; w > 0 && r >= w {
		fail("llm.reserve_output", "%d leaves no room for the prompt in the %d-token llm.context_window", r, w)
	}
	for _, name := range sortedKeys(c.Gateway.Models) {
		e, key := c.Gateway.Models[name], "gateway.models."+name
		if strings.TrimSpace(name) == "" {
			fail(key, "a model name must not be empty")
		}
		nonEmpty(key+".model", e.Model)
		positive(key+".context_window", int64(e.ContextWindow))
		positive(key+".reserve_output", int64(e.ReserveOutput))
		if w, r := e.ContextWindow, e.ReserveOutput; w > 0 && r >= w {
			fail(key+".reserve_output", "%d leaves no room for the prompt in the %d-token context_window", r, w)
		}
	}
	return err
}

// UsesAbsolutePaths reports whether skill locations are shown as absolute
// paths (default false).
func (s SkillsConfig) UsesAbsolutePaths() bool { return s.AbsolutePaths != nil && *s.AbsolutePaths }

// ExcludesCurrentChat reports whether memories from the current chat are
// left out of its prompt (default true).
func (m MemoryConfig) ExcludesCurrentChat() bool {
	return m.ExcludeCurrentChat == nil || *m.ExcludeCurrentChat
}

func indexKey(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// cleanRel is p as a clean slash path, for the checks on paths that
// loom.yaml names.
func cleanRel(p string) string { return path.Clean(p) }
