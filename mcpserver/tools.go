package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/md"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// Bounds on tool inputs.
const (
	maxCountText   = 4 << 20  // count_tokens text, bytes
	maxRecall      = 1000     // recall's largest limit
	defaultRecall  = 100      // recall's limit when none is given
	maxFilterBytes = 1 << 10  // recall's text filter
	maxQueryBytes  = 64 << 10 // recall's query
	maxIDBytes     = 128
)

// RememberInput are the arguments of the remember tool.
type RememberInput struct {
	Content    string `json:"content" jsonschema:"the fact or instruction to remember, in one or a few sentences"`
	Category   string `json:"category,omitempty" jsonschema:"the kind of memory; empty means the first configured category"`
	Supersedes string `json:"supersedes,omitempty" jsonschema:"id of an active memory this one replaces"`
	User       string `json:"user,omitempty" jsonschema:"the user the memory belongs to; empty means the server's scope"`
}

// RememberOutput is what remember returns.
type RememberOutput struct {
	Memory memory.Memory `json:"memory"`
}

// RecallInput are the arguments of the recall tool.
type RecallInput struct {
	User     string `json:"user,omitempty" jsonschema:"list this user's memories and the workspace-wide ones; empty means the server's scope (every user when the server has none)"`
	Category string `json:"category,omitempty" jsonschema:"only memories of this category"`
	Text     string `json:"text,omitempty" jsonschema:"only memories whose content contains this text, ignoring case"`
	All      bool   `json:"all,omitempty" jsonschema:"include superseded and forgotten memories"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many memories, newest first (default 100, at most 1000)"`
	Query    string `json:"query,omitempty" jsonschema:"rank the active memories by relevance to this text instead, best first (default limit 10); any text is taken as words, never as search syntax; category and text still filter"`
}

// RecallOutput is what recall returns.
type RecallOutput struct {
	Memories []memory.Memory `json:"memories"`
	// Scores, with a query, are each memory's relevance (higher is
	// better), and Why the words it matched, in the order of Memories.
	Scores []float64  `json:"scores,omitempty"`
	Why    [][]string `json:"why,omitempty"`
	// Matched is how many memories matched; more than len(Memories) when
	// the limit cut the list.
	Matched int `json:"matched"`
}

// ForgetInput are the arguments of the forget tool.
type ForgetInput struct {
	ID string `json:"id" jsonschema:"the id of the memory to forget"`
}

// ForgetOutput is what forget returns.
type ForgetOutput struct {
	Forgotten string `json:"forgotten"`
}

// RenderInput are the arguments of render_prompt: the options of
// `loom render`.
type RenderInput struct {
	Preset       string   `json:"preset,omitempty" jsonschema:"assistant or analyst; empty means loom.yaml's, else detected"`
	Channel      string   `json:"channel,omitempty" jsonschema:"channel the agent answers on (slack, whatsapp, …)"`
	ChatURL      string   `json:"chat_url,omitempty" jsonschema:"link to this conversation"`
	Subagent     bool     `json:"subagent,omitempty" jsonschema:"render the smaller subagent prompt"`
	Now          string   `json:"now,omitempty" jsonschema:"fix the clock, as RFC 3339"`
	Timezone     string   `json:"timezone,omitempty" jsonschema:"IANA time zone for the date"`
	TestMode     bool     `json:"test_mode,omitempty" jsonschema:"leave out the clarification rule"`
	Tools        []string `json:"tools,omitempty" jsonschema:"the tools the agent has; rules for others are left out; omitted means all"`
	User         string   `json:"user,omitempty" jsonschema:"select this user's memories"`
	ChatID       string   `json:"chat_id,omitempty" jsonschema:"the current chat"`
	MemoryBudget int      `json:"memory_budget,omitempty" jsonschema:"token budget for structured memories"`
	Budget       int      `json:"budget,omitempty" jsonschema:"token budget for the whole prompt"`
	Encoding     string   `json:"encoding,omitempty" jsonschema:"o200k_base, cl100k_base or chars4"`
	Model        string   `json:"model,omitempty" jsonschema:"model name to pick the encoding from"`
}

// CountInput are the arguments of count_tokens.
type CountInput struct {
	Text     string `json:"text" jsonschema:"the text to count"`
	Encoding string `json:"encoding,omitempty" jsonschema:"o200k_base, cl100k_base or chars4; empty means the workspace's"`
	Model    string `json:"model,omitempty" jsonschema:"model name to pick the encoding from"`
}

// CountOutput is what count_tokens returns.
type CountOutput struct {
	Tokens   int    `json:"tokens"`
	Encoding string `json:"encoding"`
}

// renderOutputSchema is render_prompt's output schema. Inferred from the Go
// type it would call a diagnostic's severity an integer, but severities are
// encoded by name, and the SDK checks every answer against the schema. The
// report's is inferred from reportShape, its JSON: the type keeps its
// sections behind a method.
var renderOutputSchema = sync.OnceValue(func() *jsonschema.Schema {
	types := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[workspace.Severity](): {Type: "string", Enum: []any{workspace.Warning.String(), workspace.Error.String()}},
	}
	rep, err := jsonschema.For[reportShape](&jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		panic("mcpserver: render_prompt's report schema: " + err.Error()) // fixed types: caught by every test
	}
	types[reflect.TypeFor[prompt.Report]()] = rep
	s, err := jsonschema.For[prompt.Result](&jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		panic("mcpserver: render_prompt's output schema: " + err.Error()) // fixed types: caught by every test
	}
	return s
})

// reportShape is prompt.Report as its JSON shows it.
type reportShape struct {
	Encoding    string                 `json:"encoding"`
	Tokens      int                    `json:"tokens"`
	Budget      *int                   `json:"budget"`
	Preset      string                 `json:"preset"`
	Sections    []md.Entry             `json:"sections"`
	Diagnostics []workspace.Diagnostic `json:"diagnostics"`
}

// fieldError is a bad argument, named.
func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("argument %s: %s", field, fmt.Sprintf(format, args...))
}

func (s *Server) addTools() {
	addTool(s.mcp, &mcp.Tool{Name: "remember", Description: "Store a memory in the workspace's memory store; it enters later system prompts."}, s.remember)
	// recall declares no output schema: the SDK would validate every
	// answer against it, which costs more than the recall itself on a
	// large store. The answer is RecallOutput.
	addTool(s.mcp, &mcp.Tool{Name: "recall", Description: "List stored memories, newest first, filtered by user, category or text; with query, the memories most relevant to it, best first. Returns {memories: [{id, category, content, user, chat, created_at, superseded_by, forgotten}], matched}, and with query scores and why (the words each matched) beside memories.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, req *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, any, error) {
		r, out, err := s.recall(ctx, req, in)
		return r, out, err
	})
	addTool(s.mcp, &mcp.Tool{Name: "forget", Description: "Forget a memory by id; it no longer enters prompts."}, s.forget)
	addTool(s.mcp, &mcp.Tool{Name: "render_prompt", Description: "Render the workspace's system prompt with the given options; returns the prompt and its report.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, OutputSchema: renderOutputSchema()}, s.renderPrompt)
	addTool(s.mcp, &mcp.Tool{Name: "count_tokens", Description: "Count the tokens a text costs in an encoding.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.countTokens)
}

// checkUser enforces the server's scope: a server for one user serves that
// user alone.
func (s *Server) checkUser(u string) error {
	if len(u) > maxIDBytes {
		return fmt.Errorf("longer than %d bytes", maxIDBytes)
	}
	if s.opts.User != "" && u != "" && u != s.opts.User {
		return fmt.Errorf("this server serves user %q only", s.opts.User)
	}
	return nil
}

// openStore returns the memory store, opening it on first use. With create
// false and no database yet, it returns nil.
func (s *Server) openStore(create bool) (memory.Store, []memory.Category, error) {
	path, cats, err := s.memoryLocation()
	if err != nil {
		return nil, nil, err
	}
	if s.opts.Store != nil {
		return s.opts.Store, cats, nil
	}
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	if s.store != nil {
		return s.store, cats, nil
	}
	st, err := memory.OpenIn(s.ws, path, create, memory.WithCategories(cats))
	if st == nil && err == nil {
		return nil, cats, nil
	}
	if err != nil {
		var dbe *memory.DBError
		if errors.As(err, &dbe) {
			return nil, nil, errors.New(dbe.Diagnostic(s.ws.Root()).String())
		}
		return nil, nil, err
	}
	s.store = st
	return st, cats, nil
}

func (s *Server) remember(ctx context.Context, _ *mcp.CallToolRequest, in RememberInput) (*mcp.CallToolResult, RememberOutput, error) {
	var out RememberOutput
	if strings.TrimSpace(in.Content) == "" {
		return nil, out, fieldError("content", "is empty")
	}
	if len(in.Content) > memory.MaxContentBytes {
		return nil, out, fieldError("content", "is %d bytes; the limit is %d", len(in.Content), memory.MaxContentBytes)
	}
	if len(in.Supersedes) > maxIDBytes {
		return nil, out, fieldError("supersedes", "is not a memory id")
	}
	if err := s.checkUser(in.User); err != nil {
		return nil, out, fieldError("user", "%v", err)
	}
	user := in.User
	if user == "" {
		user = s.opts.User
	}
	_, cats, err := s.memoryLocation()
	if err != nil {
		return nil, out, err
	}
	cat := in.Category
	if cat == "" {
		cat = cats[0].Name
	}
	if err := memory.CheckCategory(cats, cat); err != nil {
		return nil, out, fieldError("category", "%v", err)
	}
	st, _, err := s.openStore(true)
	if err != nil {
		return nil, out, err
	}
	ms, err := st.Add(ctx, memory.NewMemory{Category: cat, Content: in.Content, User: user, Supersedes: in.Supersedes})
	if err != nil {
		if in.Supersedes != "" && errors.Is(err, memory.ErrNotFound) {
			return nil, out, fieldError("supersedes", "%v", err)
		}
		return nil, out, err
	}
	s.dropLists()
	s.changed(ctx)
	out.Memory = ms[0]
	return nil, out, nil
}

func (s *Server) recall(ctx context.Context, _ *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, RecallOutput, error) {
	out := RecallOutput{Memories: []memory.Memory{}}
	if err := s.checkUser(in.User); err != nil {
		return nil, out, fieldError("user", "%v", err)
	}
	if len(in.Text) > maxFilterBytes {
		return nil, out, fieldError("text", "longer than %d bytes", maxFilterBytes)
	}
	limit := in.Limit
	switch {
	case limit < 0 || limit > maxRecall:
		return nil, out, fieldError("limit", "must be between 1 and %d", maxRecall)
	case limit == 0:
		limit = defaultRecall
	}
	st, cats, err := s.openStore(false)
	if err != nil {
		return nil, out, err
	}
	if in.Category != "" {
		if err := memory.CheckCategory(cats, in.Category); err != nil {
			return nil, out, fieldError("category", "%v", err)
		}
	}
	if st == nil {
		return nil, out, nil
	}
	if in.Query != "" {
		return s.search(ctx, st, in, out)
	}
	q := memory.Query{User: in.User, All: in.All}
	if q.User == "" {
		q.User = s.opts.User
		q.AllUsers = s.opts.User == ""
	}
	ms, lower, err := s.list(ctx, st, q)
	if err != nil {
		return nil, out, err
	}
	needle := strings.ToLower(in.Text)
	for i, m := range ms {
		if in.Category != "" && m.Category != in.Category {
			continue
		}
		if needle != "" && !strings.Contains(lower[i], needle) {
			continue
		}
		out.Matched++
		if len(out.Memories) < limit {
			out.Memories = append(out.Memories, m)
		}
	}
	return nil, out, nil
}

// search is recall with a query: the store's ranked search, filtered by
// category and text.
func (s *Server) search(ctx context.Context, st memory.Store, in RecallInput, out RecallOutput) (*mcp.CallToolResult, RecallOutput, error) {
	if len(in.Query) > maxQueryBytes {
		return nil, out, fieldError("query", "longer than %d bytes", maxQueryBytes)
	}
	if in.All {
		return nil, out, fieldError("all", "a query finds active memories only")
	}
	searcher, ok := st.(memory.Searcher)
	if !ok {
		return nil, out, fmt.Errorf("this memory store cannot search")
	}
	limit := in.Limit
	if limit == 0 {
		limit = memory.DefaultSearchLimit
	}
	user := in.User
	if user == "" {
		user = s.opts.User
	}
	// The filters apply after ranking, so ask for more.
	ask := limit
	if in.Category != "" || in.Text != "" {
		ask = memory.MaxSearchLimit
	}
	hits, err := searcher.Search(ctx, memory.SearchQuery{Text: in.Query, User: user, Limit: ask})
	if err != nil {
		return nil, out, err
	}
	needle := strings.ToLower(in.Text)
	for _, h := range hits {
		if (in.Category != "" && h.Category != in.Category) || (needle != "" && !strings.Contains(strings.ToLower(h.Content), needle)) {
			continue
		}
		out.Matched++
		if len(out.Memories) < limit {
			out.Memories = append(out.Memories, h.Memory)
			out.Scores = append(out.Scores, h.Score)
			out.Why = append(out.Why, nonNilWords(h.Matched))
		}
	}
	return nil, out, nil
}

func nonNilWords(ws []string) []string {
	if ws == nil {
		return []string{}
	}
	return ws
}

// listCache keeps the last List answer of each query while the database
// files are unchanged, so that recall on a large store does not read and
// decode every row each time.
type listCache struct {
	stamp string
	q     memory.Query
	ms    []memory.Memory
	lower []string // each content in lower case, for the text filter
}

// dbStamp identifies the state of the memory database on disk: the size,
// modification time and inode of the file and of its write-ahead log,
// where another process's writes land first.
func dbStamp(path string) string {
	var b strings.Builder
	for _, p := range []string{path, path + "-wal"} {
		st, err := os.Stat(p)
		if err != nil {
			b.WriteString("-;")
			continue
		}
		fmt.Fprintf(&b, "%d/%d/%v;", st.Size(), st.ModTime().UnixNano(), inode(st))
	}
	return b.String()
}

// freshVersioner is a shared store that can say, with a query, how many
// writes the workspace-wide scope and one user's have seen
// (pgstore.Memories).
type freshVersioner interface {
	FreshVersion(ctx context.Context, user string) (uint64, error)
}

func (s *Server) list(ctx context.Context, st memory.Store, q memory.Query) ([]memory.Memory, []string, error) {
	var stamp string
	switch st := st.(type) {
	case *memory.SQLite:
		stamp = dbStamp(st.Path())
	case freshVersioner:
		// A shared store's own count of writes, read now: a NOTIFY from
		// another replica may still be on its way.
		if q.AllUsers {
			ms, err := st.(memory.Store).List(ctx, q)
			return ms, lowered(ms), err
		}
		v, err := st.FreshVersion(ctx, q.User)
		if err != nil {
			return nil, nil, err
		}
		stamp = "f" + strconv.FormatUint(v, 10)
	case interface{ Version() (uint64, bool) }:
		v, ok := st.Version()
		if !ok { // changes may go unseen: no reuse
			ms, err := st.(memory.Store).List(ctx, q)
			return ms, lowered(ms), err
		}
		stamp = "v" + strconv.FormatUint(v, 10)
	default:
		ms, err := st.List(ctx, q)
		return ms, lowered(ms), err
	}
	s.storeMu.Lock()
	for _, c := range s.lists {
		if c.q == q && c.stamp == stamp {
			s.storeMu.Unlock()
			return c.ms, c.lower, nil
		}
	}
	s.storeMu.Unlock()
	ms, err := st.List(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	lower := lowered(ms)
	s.storeMu.Lock()
	if len(s.lists) >= 8 {
		s.lists = s.lists[1:]
	}
	s.lists = append(s.lists, &listCache{stamp: stamp, q: q, ms: ms, lower: lower})
	s.storeMu.Unlock()
	return ms, lower, nil
}

// lowered is each memory's content in lower case, for the text filter.
func lowered(ms []memory.Memory) []string {
	lower := make([]string, len(ms))
	for i, m := range ms {
		lower[i] = strings.ToLower(m.Content)
	}
	return lower
}

// dropLists forgets cached lists after the server wrote to the store.
func (s *Server) dropLists() {
	s.storeMu.Lock()
	s.lists = nil
	s.storeMu.Unlock()
}

func (s *Server) forget(ctx context.Context, _ *mcp.CallToolRequest, in ForgetInput) (*mcp.CallToolResult, ForgetOutput, error) {
	var out ForgetOutput
	if in.ID == "" || len(in.ID) > maxIDBytes {
		return nil, out, fieldError("id", "is not a memory id")
	}
	st, _, err := s.openStore(false)
	if err != nil {
		return nil, out, err
	}
	if st == nil {
		return nil, out, fieldError("id", "%q: %v (the workspace has no memories)", in.ID, memory.ErrNotFound)
	}
	if s.opts.User != "" {
		// A server for one user forgets that user's memories and the
		// workspace-wide ones it can see, nothing else.
		ms, err := st.List(ctx, memory.Query{User: s.opts.User, All: true})
		if err != nil {
			return nil, out, err
		}
		found := false
		for _, m := range ms {
			found = found || m.ID == in.ID
		}
		if !found {
			return nil, out, fieldError("id", "%q: %v", in.ID, memory.ErrNotFound)
		}
	}
	if err := st.Forget(ctx, in.ID); err != nil {
		if errors.Is(err, memory.ErrNotFound) {
			return nil, out, fieldError("id", "%q: %v", in.ID, err)
		}
		return nil, out, err
	}
	s.dropLists()
	s.changed(ctx)
	out.Forgotten = in.ID
	return nil, out, nil
}

func (s *Server) renderPrompt(ctx context.Context, _ *mcp.CallToolRequest, in RenderInput) (*mcp.CallToolResult, *prompt.Result, error) {
	o := s.renderOptions()
	o.Preset, o.Channel, o.ChatURL, o.Subagent = in.Preset, in.Channel, in.ChatURL, in.Subagent
	o.Timezone, o.TestMode, o.Tools, o.ChatID = in.Timezone, in.TestMode, in.Tools, in.ChatID
	o.MemoryBudget, o.Budget, o.Encoding, o.Model = in.MemoryBudget, in.Budget, in.Encoding, in.Model
	if in.User != "" {
		if err := s.checkUser(in.User); err != nil {
			return nil, nil, fieldError("user", "%v", err)
		}
		o.User = in.User
	}
	switch {
	case in.Preset != "" && in.Preset != prompt.Assistant && in.Preset != prompt.Analyst:
		return nil, nil, fieldError("preset", "must be %s or %s", prompt.Assistant, prompt.Analyst)
	case in.Budget < 0:
		return nil, nil, fieldError("budget", "must be a positive number of tokens")
	case in.MemoryBudget < 0:
		return nil, nil, fieldError("memory_budget", "must be a positive number of tokens")
	case in.Encoding != "" && in.Model != "":
		return nil, nil, fieldError("encoding", "cannot be given together with model")
	}
	if in.Encoding != "" {
		if _, err := tokens.Get(in.Encoding); err != nil {
			return nil, nil, fieldError("encoding", "%v", err)
		}
	}
	if in.Timezone != "" {
		if _, err := time.LoadLocation(in.Timezone); err != nil {
			return nil, nil, fieldError("timezone", "%v", err)
		}
	}
	if in.Now != "" {
		t, err := time.Parse(time.RFC3339, in.Now)
		if err != nil {
			return nil, nil, fieldError("now", "%v", err)
		}
		o.Now = t
	}
	res, err := s.render(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	return nil, res, nil
}

func (s *Server) countTokens(ctx context.Context, _ *mcp.CallToolRequest, in CountInput) (*mcp.CallToolResult, CountOutput, error) {
	var out CountOutput
	if len(in.Text) > maxCountText {
		return nil, out, fieldError("text", "is %d bytes; the limit is %d", len(in.Text), maxCountText)
	}
	if in.Encoding != "" && in.Model != "" {
		return nil, out, fieldError("encoding", "cannot be given together with model")
	}
	enc, model := in.Encoding, in.Model
	if enc == "" && model == "" {
		if cfg, err := workspaceConfig(s); err == nil {
			enc, model = cfg.Encoding, cfg.Model
		}
	}
	var c tokens.Counter
	switch {
	case enc != "":
		var err error
		if c, err = tokens.Get(enc); err != nil {
			return nil, out, fieldError("encoding", "%v", err)
		}
	case model != "":
		c, _ = tokens.ForModel(model)
	default:
		c, _ = tokens.Get(tokens.Default)
	}
	text := in.Text
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	out.Tokens = c.Count(text)
	out.Encoding = tokens.NameOf(c)
	return nil, out, nil
}
