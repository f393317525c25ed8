// Package inspector is a web page that shows what the model sees: every
// section of a workspace's rendered prompt with its tokens, sources and
// status; what the budget dropped or cut, and why; the skills and memories
// chosen and left out; diagnostics; and the first section that differs
// between two renders, which is what breaks a provider's prompt cache.
//
// [Mount] attaches it to a loom server at /inspect/{ws}/. The page is
// rendered on the server from embedded templates through internal/template,
// which escapes for HTML text and quoted attributes only (context_test.go
// keeps every printed value in those places); a small embedded script
// re-renders it when a control changes and listens for workspace changes
// over Server-Sent Events. Nothing is fetched from
// anywhere else.
//
// Workspace text is always escaped; the only HTML the page builds from it
// is the Markdown preview in markdown.go, which escapes every run of text.
package inspector

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/template"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/server"
	"github.com/loomctx/loom/workspace"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// pageTemplates parses the page templates on first use, not at start-up:
// every loom command links this package, and `loom --version` should not
// pay for parsing a page it never serves.
var pageTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.NewHTML("").Funcs(template.FuncMap{
		"markdown": markdownHTML,
		"pct":      func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) },
		"prio": func(p *int) string {
			if p == nil {
				return "—"
			}
			return strconv.Itoa(*p)
		},
		"join": strings.Join,
		"budgetPct": func(tokens, budget int) float64 {
			if budget <= 0 {
				return 0
			}
			return min(100, float64(tokens)*100/float64(budget))
		},
		"ts":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") },
		"score": scoreText,
	}).ParseFS(templateFS, "templates/*.html"))
})

// Mount serves the inspector on s: the page at /inspect/{ws}/ (and
// /inspect/ for the workspace named "default"), with its fragments, its
// event stream and its forms under the same prefix. /ui/{ws} leads to it too.
func Mount(s *server.Server) error {
	in := &Inspector{srv: s, wss: map[*workspace.Workspace]*wsState{}}
	assets, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return err
	}
	s.Handle("GET /inspect-assets/", http.StripPrefix("/inspect-assets/", http.FileServerFS(assets)))
	s.HandleFunc("GET /{$}", in.index)
	s.HandleFunc("GET /inspect/{$}", in.index)
	s.HandleWorkspace("GET /ui/{ws}", func(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
		http.Redirect(w, r, "/inspect/"+url.PathEscape(ws.Name)+"/", http.StatusFound)
	})
	s.HandleWorkspace("GET /inspect/{ws}/{$}", in.page)
	s.HandleWorkspace("GET /inspect/{ws}/view", in.view)
	s.HandleWorkspace("GET /inspect/{ws}/events", in.events)
	s.HandleForm("POST /inspect/{ws}/pin", in.pin)
	s.HandleWorkspace("GET /inspect/{ws}/diff", in.diff)
	s.HandleForm("POST /inspect/{ws}/memories", in.addMemory)
	s.HandleForm("POST /inspect/{ws}/memories/{id}/forget", in.forgetMemory)
	s.AddDrainer(in.close)
	return nil
}

// index leads to the workspaces: a server of one workspace (loom serve -w,
// loom inspect --web) redirects to its page, keeping the query (the
// controls, such as budget=); a server of a root lists its workspaces, each
// a button that comes back here with ws=NAME and the same query, which
// redirects to that workspace's page. (The page templates print nothing
// into a URL: see TestTemplatesPrintOnlyInSafePlaces.)
func (in *Inspector) index(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	to := func(name string) {
		q.Del("ws")
		u := "/inspect/" + url.PathEscape(name) + "/"
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		http.Redirect(w, r, u, http.StatusFound)
	}
	if name := q.Get("ws"); name != "" {
		if _, err := in.srv.Workspace(name); err != nil {
			http.Error(w, "no workspace named "+strconv.Quote(name), http.StatusNotFound)
			return
		}
		to(name)
		return
	}
	names := in.srv.WorkspaceNames()
	if len(names) == 1 && names[0] == server.DefaultWorkspace {
		to(names[0])
		return
	}
	type field struct{ Name, Value string }
	v := struct {
		Names []string
		Keep  []field
		More  bool
	}{Names: names, More: len(names) >= server.MaxListedWorkspaces}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		for _, val := range q[k] {
			v.Keep = append(v.Keep, field{k, val})
		}
	}
	in.render(w, "index", v)
}

// Inspector serves the page for every workspace of one server.
type Inspector struct {
	srv    *server.Server
	mu     sync.Mutex
	wss    map[*workspace.Workspace]*wsState
	closed atomic.Bool
}

// wsState is the inspector's state for one workspace: its own prompt
// builder (replaced when the memory database changes, which no watcher
// sees) and the pinned renders.
type wsState struct {
	door    *workspace.Workspace
	mu      sync.Mutex
	b       *prompt.Builder
	dbStamp string
	pins    []pinned
	nextPin int
}

type pinned struct {
	Pin
	res *prompt.Result
}

// Pin is a render kept for the cache diff.
type Pin struct {
	ID    int
	Label string
}

const maxPins = 16

func (in *Inspector) state(ws *server.Workspace) *wsState {
	in.mu.Lock()
	defer in.mu.Unlock()
	st := in.wss[ws.Door]
	if st == nil {
		st = &wsState{door: ws.Door, b: prompt.New(ws.Door)}
		// With the server's shared store (PostgreSQL), the prompt's
		// memories come from it, as the server's own renders' do.
		shared, err := ws.SharedMemory(context.Background())
		if err != nil {
			return st // the store is out of reach: try again next time
		}
		if src, ok := shared.(prompt.MemorySource); ok {
			st.b.SetMemorySource(src)
		}
		in.wss[ws.Door] = st
	}
	return st
}

func (in *Inspector) close(context.Context) error {
	in.closed.Store(true)
	in.mu.Lock()
	defer in.mu.Unlock()
	var errs []error
	for _, st := range in.wss {
		errs = append(errs, st.b.Close())
	}
	return errors.Join(errs...)
}

// builder returns the workspace's builder, told to list memories again
// when the memory database changed since the last render.
func (st *wsState) builder() *prompt.Builder {
	stamp := memory.Stamp(memory.DatabaseOf(st.door))
	st.mu.Lock()
	defer st.mu.Unlock()
	if stamp != st.dbStamp {
		st.b.Invalidate()
		st.dbStamp = stamp
	}
	return st.b
}

// controls reads the render options from a query. Bad values are an error
// naming the parameter.
func controls(q url.Values) (Controls, error) {
	c := Controls{
		Channel: limit(q.Get("channel")), User: limit(q.Get("user")), Encoding: limit(q.Get("encoding")),
		Model: limit(q.Get("model")), Tools: limit(q.Get("tools")),
		TestMode: q.Get("test_mode") == "1" || q.Get("test_mode") == "on",
		Subagent: q.Get("subagent") == "1" || q.Get("subagent") == "on",
	}
	if b := strings.TrimSpace(q.Get("budget")); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n < 0 {
			return c, fmt.Errorf("budget: %q is not a number of tokens", b)
		}
		c.Budget = n
	}
	if c.Encoding != "" && c.Model != "" {
		return c, errors.New("encoding and model cannot be given together")
	}
	c.Message = strings.TrimSpace(q.Get("message"))
	if len(c.Message) > maxMessage {
		c.Message = strings.ToValidUTF8(c.Message[:maxMessage], "")
	}
	return c, nil
}

// maxMessage bounds the message control: enough for a question, and the
// recall reads only its first words anyway (memory.MaxQueryTerms).
const maxMessage = 4096

func limit(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 256 {
		s = s[:256]
	}
	return s
}

// build renders with the controls and assembles the view.
func (in *Inspector) build(ctx context.Context, ws *server.Workspace, c Controls) (*View, *prompt.Result) {
	st := in.state(ws)
	v := &View{Workspace: ws.Name, Opts: c, Query: c.query()}
	res, err := st.builder().Render(ctx, c.options())
	if res == nil {
		if err == nil {
			err = errors.New("no prompt")
		}
		v.Error = err.Error()
		return v, nil
	}
	if err != nil {
		v.Error = err.Error()
	}
	v.Encoding, v.Preset, v.Tokens = res.Report.Encoding, res.Report.Preset, res.Report.Tokens
	if res.Report.Budget != nil {
		v.Budget = *res.Report.Budget
	}
	v.SHA256 = sha(res.Prompt)
	v.Sections = sections(res)
	v.Bar = bar(v.Sections)
	v.Diagnostics = res.Report.Diagnostics
	if set, err := st.builder().Skills(); err == nil {
		v.Skills = skillRows(set, v.Sections)
		if len(v.Diagnostics) == 0 {
			v.Diagnostics = set.Diagnostics
		}
	}
	v.Memory = memoryView(ctx, ws.Door, c, res.Report.Encoding)
	if c.Message != "" {
		// What a turn with this message would recall beside it, with
		// each memory's score and why (nil with retrieval: priority).
		v.Memory.Recall = st.builder().Recall(ctx, res, c.Message, "")
	}
	st.mu.Lock()
	for _, p := range st.pins {
		v.Pins = append(v.Pins, p.Pin)
	}
	st.mu.Unlock()
	return v, res
}

func (in *Inspector) page(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	c, err := controls(r.URL.Query())
	if err != nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusBadRequest, "invalid_request", "%v", err))
		return
	}
	v, _ := in.build(r.Context(), ws, c)
	v.FormToken = in.srv.FormToken()
	in.render(w, "page", v)
}

func (in *Inspector) view(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	c, err := controls(r.URL.Query())
	if err != nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<p class="error">%s</p>`, template.HTMLEscapeString(err.Error()))
		return
	}
	v, _ := in.build(r.Context(), ws, c)
	in.render(w, "view", v)
}

func (in *Inspector) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:")
	if err := pageTemplates().ExecuteTemplate(w, name, data); err != nil {
		fmt.Fprintf(w, `<p class="error">template: %s</p>`, template.HTMLEscapeString(err.Error()))
	}
}

// events streams a "change" event whenever the workspace changes, from the
// workspace's change feed.
func (in *Inspector) events(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	feed, cancel, err := ws.Door.Subscribe(50 * time.Millisecond)
	if err != nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusConflict, "not_watchable", "%v", err))
		return
	}
	defer cancel()
	quiet := memory.NewReadFilter(ws.Door)
	// A stream outlives the server's write timeout.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n: connected\n\n")
	fl.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case c, ok := <-feed:
			if !ok {
				return
			}
			if quiet.OnlyRead(c.Paths) {
				continue // the memory database was read, not written
			}
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", len(c.Paths))
		}
		fl.Flush()
		if in.closed.Load() {
			return
		}
	}
}

// pin keeps the render for the given controls, for the cache diff.
func (in *Inspector) pin(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	if err := r.ParseForm(); err != nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusBadRequest, "invalid_request", "%v", err))
		return
	}
	c, err := controls(r.Form)
	if err != nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusBadRequest, "invalid_request", "%v", err))
		return
	}
	st := in.state(ws)
	res, err := st.builder().Render(r.Context(), c.options())
	if res == nil {
		server.WriteProblem(w, r, err)
		return
	}
	st.mu.Lock()
	st.nextPin++
	label := limit(r.Form.Get("label"))
	if label == "" {
		label = fmt.Sprintf("pin %d (%d tokens, %s)", st.nextPin, res.Report.Tokens, time.Now().UTC().Format("15:04:05"))
	}
	st.pins = append(st.pins, pinned{Pin: Pin{ID: st.nextPin, Label: label}, res: res})
	if len(st.pins) > maxPins {
		st.pins = st.pins[1:]
	}
	id := st.nextPin
	st.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "label": label})
}

// diff compares a pinned render with the render for the given controls.
func (in *Inspector) diff(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	q := r.URL.Query()
	c, err := controls(q)
	if err != nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusBadRequest, "invalid_request", "%v", err))
		return
	}
	id, _ := strconv.Atoi(q.Get("pin"))
	st := in.state(ws)
	st.mu.Lock()
	var old *pinned
	for i := range st.pins {
		if st.pins[i].ID == id {
			old = &st.pins[i]
		}
	}
	st.mu.Unlock()
	if old == nil {
		in.render(w, "diff", &DiffView{Error: "no such pinned render; pin one first"})
		return
	}
	cur, err := st.builder().Render(r.Context(), c.options())
	if cur == nil {
		in.render(w, "diff", &DiffView{Error: fmt.Sprint(err)})
		return
	}
	dv := compare(old.res, cur)
	dv.Pin = old.Pin
	in.render(w, "diff", dv)
}

func (in *Inspector) addMemory(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	if err := r.ParseForm(); err != nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusBadRequest, "invalid_request", "%v", err))
		return
	}
	content := r.Form.Get("content")
	if strings.TrimSpace(content) == "" {
		server.WriteProblem(w, r, server.Errorf(http.StatusBadRequest, "invalid_request", "content: is empty"))
		return
	}
	st, cats, err := openStore(r.Context(), ws)
	if err != nil {
		server.WriteProblem(w, r, err)
		return
	}
	defer st.Close()
	cat := r.Form.Get("category")
	if cat == "" {
		cat = cats[0].Name
	}
	if err := memory.CheckCategory(cats, cat); err != nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusBadRequest, "invalid_request", "category: %v", err))
		return
	}
	ms, err := st.Add(r.Context(), memory.NewMemory{Category: cat, Content: content, User: limit(r.Form.Get("user"))})
	if err != nil {
		server.WriteProblem(w, r, server.Errorf(http.StatusBadRequest, "invalid_request", "%v", err))
		return
	}
	server.WriteJSON(w, http.StatusCreated, ms[0])
}

func (in *Inspector) forgetMemory(w http.ResponseWriter, r *http.Request, ws *server.Workspace) {
	st, _, err := openStore(r.Context(), ws)
	if err != nil {
		server.WriteProblem(w, r, err)
		return
	}
	defer st.Close()
	id := r.PathValue("id")
	if err := st.Forget(r.Context(), id); err != nil {
		if errors.Is(err, memory.ErrNotFound) {
			server.WriteProblem(w, r, server.Errorf(http.StatusNotFound, "not_found", "memory %q: %v", id, err))
			return
		}
		server.WriteProblem(w, r, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]string{"forgotten": id})
}

// openStore opens the workspace's memory store: the server's shared one
// (PostgreSQL), whose Close here does nothing, or the SQLite database.
func openStore(ctx context.Context, sw *server.Workspace) (memory.Store, []memory.Category, error) {
	ws := sw.Door
	cfg, err := config.Load(ws)
	if err != nil {
		return nil, nil, err
	}
	cats := memory.CategoriesOf(cfg)
	shared, err := sw.SharedMemory(ctx)
	if err != nil {
		return nil, nil, err
	}
	if shared != nil {
		return keepOpen{shared}, cats, nil
	}
	path, err := config.MemoryStoreLocation(ws.Root(), cfg)
	if err != nil {
		return nil, nil, err
	}
	st, err := memory.OpenIn(ws, path, true, memory.WithCategories(cats))
	if err != nil {
		return nil, nil, err
	}
	return st, cats, nil
}

// keepOpen is a shared store whose Close leaves it open.
type keepOpen struct{ memory.Store }

func (keepOpen) Close() error { return nil }

func urlEscape(s string) string { return url.QueryEscape(s) }
